#!/usr/bin/env node
// Checks a `battlelog export` file with the JavaScript verifier (verify.js),
// independently of the Rust audit.
//
//   node check-export.mjs FILE [--head HASH] [--roller-key HEX] [--log-key VKEY] [--json]
//
// --head: the hash the forum posted (an export cut short then fails);
// --roller-key: the roller key the operator publishes (every commitment must
// be signed by it); --log-key: the journal's log key the operator publishes
// (a C2SP verifier key: a trailer signed by another key fails, docs/protocol.md §5).
//
// Prints one summary line on stdout (or the whole report with --json).
// Exit status: 0 verified or unrevealed (the battle's seed is not revealed
// yet: nothing is wrong so far), 1 failed, 2 bad input (no such file, not an
// export, bad arguments) — with one line on stderr naming the problem.
import fs from 'node:fs';

import { ExportFormatError, verifyExport } from './verify.js';

function usage(message) {
  process.stderr.write(`check-export: ${message} (usage: check-export.mjs FILE [--head HASH] [--roller-key HEX] [--log-key VKEY] [--json])\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = { file: null, head: null, rollerKey: null, logKey: null, json: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--head') {
      args.head = argv[++i];
      if (!args.head || !/^[0-9a-fA-F]{64}$/.test(args.head)) usage('--head takes a hash of 64 hex digits');
    } else if (a === '--roller-key') {
      args.rollerKey = argv[++i];
      if (!args.rollerKey || !/^[0-9a-fA-F]{64}$/.test(args.rollerKey)) usage('--roller-key takes a key of 64 hex digits');
    } else if (a === '--log-key') {
      args.logKey = argv[++i];
      if (!args.logKey || args.logKey.split('+').length < 3) usage('--log-key takes a verifier key <origin>+<key id>+<base64 key>');
    } else if (a === '--json') {
      args.json = true;
    } else if (a.startsWith('-')) {
      usage(`unknown option ${a}`);
    } else if (args.file === null) {
      args.file = a;
    } else {
      usage(`one file only, not also ${a}`);
    }
  }
  if (args.file === null) usage('name the export file');
  return args;
}

const args = parseArgs(process.argv.slice(2));
let text;
try {
  text = fs.readFileSync(args.file, 'utf8');
} catch (e) {
  process.stderr.write(`check-export: cannot read ${args.file}: ${e.code || e.message}\n`);
  process.exit(2);
}

/** The trailer's line: ok with its tree size and key status, failed naming what, or none. */
function checkpointSummary(trailer) {
  if (!trailer) return 'none (no trailer: checked only as far as the chain)';
  if (trailer.check === 'ok') return `ok (tree size ${trailer.checkpoint.size}, log key ${trailer.logKey} ${trailer.keyStatus})`;
  return `failed (${[...new Set(trailer.failures.map((f) => f.what))].join(', ')})`;
}

let report;
try {
  report = await verifyExport(text, { head: args.head, rollerKey: args.rollerKey, logKey: args.logKey });
} catch (e) {
  if (e instanceof ExportFormatError) {
    process.stderr.write(`check-export: ${args.file} is not an export: ${e.message}\n`);
    process.exit(2);
  }
  throw e;
}

if (args.json) {
  // Records are left out: they are in the file already.
  process.stdout.write(JSON.stringify(report, (k, v) => (k === 'decoded' ? undefined : v), 2) + '\n');
} else {
  const count = (check) => report.rolls.filter((r) => r.check === check).length;
  process.stdout.write(
    `${report.status} ${report.stream}: ${report.events.length} events, rolls ${count('ok')} ok, ${count('bad')} bad, ` +
      `${count('unrevealed')} unrevealed; first failure ${report.firstFailure ?? 'none'}; head ${report.headHash}; ` +
      `roller key ${report.rollerKey ?? 'none'} (${report.rollerKeyStatus}); ` +
      `outcomes ${report.outcomes ? `${report.outcomes.checked} checked` : 'not checked (no rules engine)'}; ` +
      `checkpoint ${checkpointSummary(report.trailer)}\n`,
  );
}
if (report.status === 'failed') {
  const first = report.problems[0];
  process.stderr.write(`check-export: version ${first.version}: ${first.check}: ${first.message}\n`);
  process.exit(1);
}
process.exit(0);
