#!/usr/bin/env node
// Opens a battle on a running resolver and acts once, leaving it open — so
// that its export has a roll whose seed is not revealed yet. `battlelog demo`
// closes every battle it plays and the CLI has no `open`/`act`, hence this
// minimal gRPC client over node:http2 (plaintext h2c; no dependencies).
//
//   BATTLELOG_TOKEN=<forum token> node open-and-act.mjs http://127.0.0.1:PORT [--battle ID] [--acts N] [--close]
//
// --battle: act on this open battle instead of opening one; --acts: how
// many roll actions (default 1; each journals a roll and an action, two
// events); --disputes: a dispute raised on each action of a new battle (the
// page's dispute navigation and filter are tested on it); --close: close the battle afterwards (its seed revealed). The
// big battles of the benchmark and the live page's test are made this way.
//
// Prints the battle id on stdout.
import http2 from 'node:http2';

import { protobufFields } from '../verify.js';
import { bytesField, concat, messageField, struct, varintField } from './protobuf.mjs';

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
      const length = body.readUInt32BE(1);
      resolve(new Uint8Array(body.subarray(5, 5 + length)));
    });
    stream.end(frame);
  });
}

/** call(), waiting out the tenant's rate limit (RESOURCE_EXHAUSTED says how long); the request id makes a retry idempotent. */
async function callPaced(session, method, message, token) {
  for (;;) {
    try {
      return await call(session, method, message, token);
    } catch (e) {
      const wait = /gRPC status 8: .*retry in (\d+) ms/.exec(e.message);
      if (!wait) throw e;
      await new Promise((resolve) => setTimeout(resolve, Number(wait[1]) + 1));
    }
  }
}

async function main([resolverUrl, ...args]) {
  const token = process.env.BATTLELOG_TOKEN;
  if (!resolverUrl || !resolverUrl.startsWith('http://') || !token) {
    throw new Error('usage: BATTLELOG_TOKEN=<forum token> open-and-act.mjs http://HOST:PORT [--battle ID] [--acts N] [--disputes] [--close]');
  }
  let given = null;
  let acts = 1;
  let close = false;
  let disputes = false;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--battle') given = args[++i];
    else if (args[i] === '--acts') acts = Number(args[++i]);
    else if (args[i] === '--close') close = true;
    else if (args[i] === '--disputes') disputes = true;
    else throw new Error(`unknown argument ${args[i]}`);
  }
  if (!Number.isSafeInteger(acts) || acts < 0) throw new Error('--acts takes a count');
  const session = http2.connect(resolverUrl);
  session.on('error', (e) => {
    process.stderr.write(`open-and-act: ${e.message}\n`);
    process.exit(1);
  });
  const run = `verifier-${process.pid}-${Date.now()}`;
  try {
    // OpenBattleRequest: ruleset 1, title 2, forum_ref 3, participants 4,
    // client_seed 5, request_id 6 (resolver.proto).
    let battleId = given;
    if (!battleId) {
      const opened = await call(session, 'OpenBattle', concat([
        bytesField(1, 'pokemon-d6@2'), bytesField(2, 'Left open for the verifier'), bytesField(3, `forum:verifier/${run}`),
        messageField(4, struct({ id: 'pikachu' })), messageField(4, struct({ id: 'meowth' })),
        bytesField(5, `forum:verifier/${run}`), bytesField(6, `${run}-open`),
      ]), token);
      const idField = protobufFields(opened).find((f) => f.number === 1);
      battleId = new TextDecoder().decode(idField.value);
    }
    // ActRequest: battle_id 1, action 2, request_id 3.
    const expressions = ['2d6+1', '4d6kh3', '1d20!', '3d8+2', '4dF'];
    for (let i = 0; i < acts; i++) {
      const expression = acts === 1 ? '2d6+1' : expressions[i % expressions.length];
      await callPaced(session, 'Act', concat([
        bytesField(1, battleId),
        messageField(2, struct({ type: 'roll', actor: i % 2 ? 'meowth' : 'pikachu', expression, purpose: 'a roll left unrevealed' })),
        bytesField(3, `${run}-act-${i}`),
      ]), token);
    }
    if (disputes && !given) {
      // DisputeRequest: battle_id 1, by 2, refers_to 3, reason 4, request_id 5.
      // In a new battle act i's resolution is version 2 + 2i.
      for (let i = 0; i < acts; i++) {
        await callPaced(session, 'Dispute', concat([
          bytesField(1, battleId), bytesField(2, i % 2 ? 'pikachu' : 'meowth'), varintField(3, 2 + 2 * i),
          bytesField(4, 'that roll was not fair'), bytesField(5, `${run}-dispute-${i}`),
        ]), token);
      }
    }
    if (close) {
      // CloseRequest: battle_id 1, by 2, reason 3, request_id 4.
      await callPaced(session, 'Close', concat([bytesField(1, battleId), bytesField(2, 'verifier'), bytesField(3, 'done'), bytesField(4, `${run}-close`)]), token);
    }
    process.stdout.write(`${battleId}\n`);
  } finally {
    session.close();
  }
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`open-and-act: ${e.message}\n`);
  process.exit(1);
});
