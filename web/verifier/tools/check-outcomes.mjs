#!/usr/bin/env node
// Re-resolves every action of a battle export with the JavaScript rules
// (rules/index.js checkOutcomes), reading each event from its hashed record
// bytes (not the readable copy beside them), and prints
//   outcomes: N actions re-resolved, M differ; first failure V|none
// then one line per difference. Exits 1 when an outcome differs, 2 on an
// unreadable file.
//
//   node tools/check-outcomes.mjs EXPORT.jsonl
import fs from 'node:fs';

import { checkOutcomes } from '../rules/index.js';
import { base64ToBytes, decodeRecord } from '../verify.js';

const [file] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: check-outcomes.mjs EXPORT.jsonl\n');
  process.exit(2);
}
let lines;
try {
  lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l))
    .filter((l) => 'version' in l)
    .map((l) => ({ version: l.version, event: decodeRecord(base64ToBytes(l.record)).event }));
} catch (e) {
  process.stderr.write(`check-outcomes: ${file}: ${e.message}\n`);
  process.exit(2);
}
const results = checkOutcomes(lines);
const bad = results.filter((r) => !r.ok);
process.stdout.write(`outcomes: ${results.length} actions re-resolved, ${bad.length} differ; first failure ${bad[0]?.version ?? 'none'}\n`);
for (const r of bad) process.stdout.write(`  v${r.version} ${r.reason}: ${r.problem}\n`);
process.exit(bad.length === 0 ? 0 : 1);
