#!/usr/bin/env node
// Plays random battles through a real resolver, one per ruleset version
// (the actions of tools/rules-random.mjs, valid and not: the resolver
// refuses what the rules forbid; disputes; rulings with overrides by a
// judge; a free roll now and then), then closes each, so that their exports
// hold real outcomes, real dice and real rulings for the JavaScript rules
// to re-resolve (tools/check-outcomes.mjs). Minimal gRPC over node:http2
// (plaintext h2c), as open-and-act.mjs.
//
//   BATTLELOG_TOKEN=<forum token> BATTLELOG_JUDGE_TOKEN=<judge token for
//   subject judge-anna> node rules-battle.mjs http://HOST:PORT [ACTIONS] [SEED]
//
// Prints one line per battle: `<battle id> <ruleset> <actions taken> <refused>`.
import http2 from 'node:http2';

import { openBattle, recordAction, resolveAction, rulesetIds } from '../rules/index.js';
import { decodeRecord, protobufFields } from '../verify.js';
import { bytesField, concat, messageField, struct, varintField } from './protobuf.mjs';
import { generator } from './rules-random.mjs';

class GrpcError extends Error {
  constructor(method, status, message) {
    super(`${method}: gRPC status ${status}: ${message}`);
    this.status = status;
  }
}

/** One RPC, waiting out the tenant's rate limit (RESOURCE_EXHAUSTED says how
 * long); the request id makes a retry idempotent. */
async function call(session, method, message, token) {
  for (;;) {
    try {
      return await callOnce(session, method, message, token);
    } catch (e) {
      const wait = e instanceof GrpcError && e.status === 8 ? /retry in (\d+) ms/.exec(e.message) : null;
      if (!wait) throw e;
      await new Promise((resolve) => setTimeout(resolve, Number(wait[1]) + 1));
    }
  }
}

function callOnce(session, method, message, token) {
  return new Promise((resolve, reject) => {
    const frame = new Uint8Array(5 + message.length);
    new DataView(frame.buffer).setUint32(1, message.length, false);
    frame.set(message, 5);
    const stream = session.request({
      ':method': 'POST', ':path': `/battlelog.v1.Resolver/${method}`,
      'content-type': 'application/grpc', te: 'trailers', authorization: `Bearer ${token}`,
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
    stream.on('response', readStatus);
    stream.on('trailers', readStatus);
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('end', () => {
      if (status !== 0) return reject(new GrpcError(method, status, statusMessage));
      const body = Buffer.concat(chunks);
      resolve(new Uint8Array(body.subarray(5, 5 + body.readUInt32BE(1))));
    });
    stream.end(frame);
  });
}

const field = (bytes, number) => protobufFields(bytes).find((f) => f.number === number);
const text = (bytes, number) => new TextDecoder().decode(field(bytes, number).value);
const uint = (bytes, number) => Number(field(bytes, number)?.value ?? 0);

/** ActResponse.resolved's outcome, read with the journal record decoder
 * (JournalRecord.payload (7) → BattleEvent.action_resolved (4)). */
function outcomeOf(actResponse) {
  const resolved = field(actResponse, 1).value;
  return decodeRecord(bytesField(7, messageField(4, resolved))).event.outcome;
}

async function main([url, actionsArg = '30', seedArg = '7']) {
  const [forum, judge] = [process.env.BATTLELOG_TOKEN, process.env.BATTLELOG_JUDGE_TOKEN];
  if (!url?.startsWith('http://') || !forum || !judge) {
    throw new Error('usage: BATTLELOG_TOKEN=… BATTLELOG_JUDGE_TOKEN=… rules-battle.mjs http://HOST:PORT [ACTIONS] [SEED]');
  }
  // Disputes and rulings more often than in the differential: overrides
  // are what this run is for.
  const g = generator(Number(seedArg), { common: 0.2 });
  const session = http2.connect(url);
  const run = `rules-${process.pid}-${Date.now()}`;
  let request = 0;
  const rid = () => `${run}-${request++}`;
  try {
    for (const ruleset of rulesetIds) {
      const participants = g.participants(ruleset);
      const opened = await call(session, 'OpenBattle', concat([
        bytesField(1, ruleset), bytesField(2, `Random ${ruleset}`), bytesField(3, `forum:rules/${run}/${ruleset}`),
        ...participants.map((p) => messageField(4, struct(p))), bytesField(5, `forum:rules/${run}/${ruleset}`), bytesField(6, rid()),
      ]), forum);
      const battle = text(opened, 1);
      const ids = participants.map((p) => p.id);
      const lines = [];
      // A script's line index → the battle version of what it journaled.
      const versions = [];
      const at = (index) => versions[index] ?? 1_000_000 + index;
      let refused = 0;
      // The battle as the JS rules fold it from the resolver's outcomes (the
      // generator aims exchange choices at the strike awaiting one).
      let state = openBattle(ruleset, participants);
      for (let i = 0; i < Number(actionsArg); i++) {
        let action = g.action(ruleset, ids, lines, state);
        if (g.chance(0.04)) action = { type: 'roll', actor: g.pick(ids), expression: g.pick(['2d6+1', '1d20', '4dF', '3d6kh2']), purpose: 'a free roll' };
        lines.push({ action });
        try {
          let response;
          if (action.type === 'dispute') {
            response = await call(session, 'Dispute', concat([
              bytesField(1, battle), bytesField(2, action.by), varintField(3, at(action.refers_to)), bytesField(4, action.reason), bytesField(5, rid()),
            ]), forum);
            versions[i] = uint(response, 1);
            state = resolveAction(state, action, [], i).state ?? state;
          } else if (action.type === 'ruling') {
            response = await call(session, 'Rule', concat([
              bytesField(1, battle), bytesField(2, action.judge), varintField(3, at(action.refers_to)), bytesField(4, action.text),
              ...(action.override ? [messageField(5, struct(action.override))] : []), bytesField(6, rid()),
            ]), judge);
            versions[i] = uint(response, 1);
            state = resolveAction(state, action, [], i).state ?? state;
          } else {
            const sent = { ...action };
            if ('against' in sent && typeof sent.against === 'number') sent.against = at(sent.against);
            response = await call(session, 'Act', concat([bytesField(1, battle), messageField(2, struct(sent)), bytesField(3, rid())]), forum);
            versions[i] = uint(response, 2);
            if (action.type !== 'roll') state = recordAction(state, action, outcomeOf(response), i);
          }
        } catch (e) {
          // Refused by the rules (FAILED_PRECONDITION) or the reader
          // (INVALID_ARGUMENT): nothing journaled, as in a script.
          if (!(e instanceof GrpcError) || ![3, 9].includes(e.status)) throw e;
          refused += 1;
        }
      }
      await call(session, 'Close', concat([bytesField(1, battle), bytesField(3, 'random battle over'), bytesField(4, rid())]), forum);
      process.stdout.write(`${battle} ${ruleset} ${Number(actionsArg) - refused} ${refused}\n`);
    }
  } finally {
    session.close();
  }
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`rules-battle: ${e.message}\n`);
  process.exit(1);
});
