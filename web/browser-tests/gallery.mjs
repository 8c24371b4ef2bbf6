#!/usr/bin/env node
// Plays a "gallery" battle on a running resolver: opens a battle, rolls each
// dice expression given on the command line as a free roll (docs/rules.md §5.2),
// and closes it so that its seeds are revealed and every roll can be
// re-derived. A minimal gRPC client over node:http2 (plaintext h2c) with its
// own few lines of protobuf, so that it depends on nothing else here.
//
//   BATTLELOG_TOKEN=<forum token> node gallery.mjs http://127.0.0.1:PORT EXPR...
//
// Prints the battle id on stdout. A roll whose arithmetic fails (division by
// zero) is journaled with its error like any other; should the resolver also
// refuse the action, the refusal is reported on stderr and the gallery goes on.
import http2 from 'node:http2';

const utf8 = new TextEncoder();

function varint(value) {
  const out = [];
  let v = BigInt(value);
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Uint8Array.from(out);
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A length-delimited field (string or message), written even when empty. */
function field(number, value) {
  const bytes = typeof value === 'string' ? utf8.encode(value) : value;
  return concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
}

/** google.protobuf.Struct of string values: map entries { 1: key, 2: Value { 3: string } }. */
function struct(object) {
  return concat(Object.entries(object).map(([k, v]) => field(1, concat([field(1, k), field(2, field(3, String(v)))]))));
}

/** The first length-delimited field `number` of a message, as text. */
function stringField(bytes, number) {
  let at = 0;
  const read = () => {
    let value = 0n;
    let shift = 0n;
    for (;;) {
      const byte = bytes[at++];
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
      shift += 7n;
    }
  };
  while (at < bytes.length) {
    const key = Number(read());
    const wire = key & 7;
    if (wire === 0) read();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const length = Number(read());
      if (key >> 3 === number) return new TextDecoder().decode(bytes.subarray(at, at + length));
      at += length;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  throw new Error(`no field ${number} in the reply`);
}

function call(session, method, message, token) {
  return new Promise((resolve, reject) => {
    const frame = new Uint8Array(5 + message.length);
    new DataView(frame.buffer).setUint32(1, message.length, false); // byte 0: not compressed
    frame.set(message, 5);
    const stream = session.request({
      ':method': 'POST',
      ':path': `/battlelog.v1.Resolver/${method}`,
      'content-type': 'application/grpc',
      te: 'trailers',
      authorization: `Bearer ${token}`,
    });
    const chunks = [];
    let status = null;
    let statusMessage = '';
    const readStatus = (headers) => {
      if (headers['grpc-status'] !== undefined) {
        status = Number(headers['grpc-status']);
        statusMessage = decodeURIComponent(headers['grpc-message'] || '');
      }
    };
    stream.on('response', readStatus); // a "trailers-only" error reply
    stream.on('trailers', readStatus);
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('end', () => {
      if (status !== 0) {
        reject(new Error(`${method}: gRPC status ${status}: ${statusMessage}`));
        return;
      }
      const body = Buffer.concat(chunks);
      resolve(new Uint8Array(body.subarray(5, 5 + body.readUInt32BE(1))));
    });
    stream.end(frame);
  });
}

async function main(resolverUrl, expressions) {
  const token = process.env.BATTLELOG_TOKEN;
  if (!resolverUrl || !resolverUrl.startsWith('http://') || !token || expressions.length === 0) {
    throw new Error('usage: BATTLELOG_TOKEN=<forum token> gallery.mjs http://HOST:PORT EXPR...');
  }
  const session = http2.connect(resolverUrl);
  session.on('error', (e) => {
    process.stderr.write(`gallery: ${e.message}\n`);
    process.exit(1);
  });
  const run = `gallery-${process.pid}-${Date.now()}`;
  try {
    // OpenBattleRequest: ruleset 1, title 2, forum_ref 3, participants 4,
    // client_seed 5, request_id 6 (resolver.proto).
    const opened = await call(session, 'OpenBattle', concat([
      field(1, 'pokemon-d6@2'), field(2, 'A gallery of dice'), field(3, `forum:browser-tests/${run}`),
      field(4, struct({ id: 'pikachu' })), field(4, struct({ id: 'meowth' })),
      field(5, `forum:browser-tests/${run}`), field(6, `${run}-open`),
    ]), token);
    const battleId = stringField(opened, 1);
    for (const [i, expression] of expressions.entries()) {
      // ActRequest: battle_id 1, action 2, request_id 3.
      try {
        await call(session, 'Act', concat([
          field(1, battleId),
          field(2, struct({ type: 'roll', actor: 'pikachu', expression, purpose: `gallery ${expression}` })),
          field(3, `${run}-act-${i}`),
        ]), token);
      } catch (e) {
        process.stderr.write(`gallery: ${expression}: ${e.message}\n`);
      }
    }
    // CloseRequest: battle_id 1, by 2, reason 3, request_id 4.
    await call(session, 'Close', concat([
      field(1, battleId), field(2, 'browser-tests'), field(3, 'gallery done'), field(4, `${run}-close`),
    ]), token);
    process.stdout.write(`${battleId}\n`);
  } finally {
    session.close();
  }
}

main(process.argv[2], process.argv.slice(3)).catch((e) => {
  process.stderr.write(`gallery: ${e.message}\n`);
  process.exit(1);
});
