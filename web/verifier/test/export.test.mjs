// verifyExport (docs/protocol.md §4): a small export made at test time verifies;
// every kind of forgery fails, at the version where it is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ExportFormatError, base64ToBytes, bytesToBase64, verifyExport } from '../verify.js';
import { SEEDS, makeExport } from '../tools/make-export.mjs';
import { changeDie, dropEvent, rechain } from '../tools/tamper.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

const lines = (text) => text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
const join = (ls) => ls.map((l) => JSON.stringify(l)).join('\n') + '\n';

function assertFailsAt(report, version, check) {
  assert.equal(report.status, 'failed');
  assert.equal(report.firstFailure, version, JSON.stringify(report.problems));
  if (check) assert.equal(report.problems[0].check, check, JSON.stringify(report.problems));
  // Everything before the first failure is still marked good.
  for (const e of report.events.filter((e) => e.version < version)) assert.notEqual(e.check, 'bad', `version ${e.version}`);
}

test('a closed battle verifies: chain, commitment, every roll', async () => {
  const { text, rolls } = await makeExport();
  const report = await verifyExport(text);
  assert.equal(report.status, 'verified');
  assert.equal(report.firstFailure, null);
  assert.deepEqual(report.problems, []);
  assert.ok(report.events.every((e) => e.hash === 'ok' && e.link === 'ok' && e.record === 'ok' && e.event === 'ok' && e.check === 'ok'));
  assert.deepEqual(report.rolls.map((r) => [r.version, r.nonce, r.check]), rolls.map((r) => [r.version, r.nonce, 'ok']));
  assert.deepEqual(report.commitments.map((c) => [c.epoch, c.check]), [[0, 'ok']]);
  assert.equal(report.headHash, lines(text).at(-1).hash);
});

test('roll-forward: rolls that carry their action verify; an event between a roll and its resolution fails there', async () => {
  const clean = await verifyExport((await makeExport({ forAction: true })).text);
  assert.equal(clean.status, 'verified', JSON.stringify(clean.problems));
  const { text, versionOf } = await makeExport({ leftPending: true });
  const report = await verifyExport(text);
  // The dispute came before the second roll's resolution: the operator's
  // finding, at the dispute.
  assertFailsAt(report, versionOf('DisputeRaised'), 'roll');
  assert.match(report.problems[0].message, /roll 1 was drawn for an action that was not resolved before this event/);
});

test('an open battle is unrevealed, not failed: its rolls wait for the seed', async () => {
  const { text } = await makeExport({ closed: false });
  const report = await verifyExport(text);
  assert.equal(report.status, 'unrevealed');
  assert.equal(report.firstFailure, null);
  assert.ok(report.rolls.every((r) => r.check === 'unrevealed'));
  assert.deepEqual(report.commitments.map((c) => c.check), ['unrevealed']);
  for (const r of report.rolls) assert.equal(report.events[r.version].check, 'unrevealed');
});

test('a mid-battle reveal: the revealed epoch verifies, the next one waits', async () => {
  const open = await verifyExport((await makeExport({ midReveal: true, closed: false })).text);
  assert.equal(open.status, 'unrevealed');
  assert.deepEqual(open.rolls.map((r) => [r.epoch, r.check]), [[0, 'ok'], [0, 'ok'], [1, 'unrevealed']]);
  assert.deepEqual(open.commitments.map((c) => c.check), ['ok', 'unrevealed']);
  const closed = await verifyExport((await makeExport({ midReveal: true })).text);
  assert.equal(closed.status, 'verified');
});

test('one die changed inside the record, the chain recomputed: fails at that roll', async () => {
  const { text, rolls } = await makeExport();
  const target = rolls[1].version;
  const forged = await changeDie(text, target);
  const report = await verifyExport(forged.text);
  // The chain alone cannot see it: it was recomputed.
  assert.ok(report.events.every((e) => e.hash === 'ok'));
  assertFailsAt(report, target, 'roll');
  assert.equal(report.rolls[1].check, 'bad');
  assert.equal(report.rolls[0].check, 'ok');
  assert.equal(report.rolls[2].check, 'ok');
});

test('a die changed in an epoch still secret cannot be caught yet, and is caught at the reveal', async () => {
  const { text, rolls } = await makeExport({ closed: false });
  const forged = await changeDie(text, rolls[0].version);
  // The free roll's recorded outcome still holds the die as drawn, so the
  // rules give the forgery away at once, at that action...
  assertFailsAt(await verifyExport(forged.text), rolls[0].version + 1, 'outcomes');
  // ...but a forger who rewrote the outcome too is only caught at the
  // reveal: without the rules' check, nothing is wrong yet.
  assert.equal((await verifyExport(forged.text, { rules: null })).status, 'unrevealed');
  // The reveal then exposes it: append the close and the reveal to the forgery.
  const full = await makeExport({ closed: true });
  const tail = lines(full.text).slice(lines(text).length);
  const extended = [...lines(forged.text), ...tail];
  await rechain(extended, lines(forged.text).length);
  assertFailsAt(await verifyExport(join(extended)), rolls[0].version, 'roll');
});

test('one event removed: fails at the missing version', async () => {
  const { text, versionOf } = await makeExport();
  const target = versionOf('ActionResolved');
  const report = await verifyExport(dropEvent(text, target).text);
  assertFailsAt(report, target, 'sequence');
});

test('the last events cut off: only a head hash from elsewhere can tell', async () => {
  const { text, lastVersion } = await makeExport();
  const all = lines(text);
  const cut = join(all.slice(0, -2));
  assert.equal((await verifyExport(cut)).status, 'unrevealed', 'the reveal was cut with the close');
  // The close without its reveal gives the cut away even without a head.
  assertFailsAt(await verifyExport(join(all.slice(0, -1))), lastVersion, 'commitment');
  const headPosted = all.at(-1).hash;
  const report = await verifyExport(cut, { head: headPosted });
  assertFailsAt(report, lastVersion - 1, 'head');
  assert.equal(report.head.check, 'bad');
  // The right head, or an earlier one the export continues, is fine.
  assert.equal((await verifyExport(text, { head: headPosted })).head.check, 'ok');
  const earlier = await verifyExport(text, { head: all[3].hash });
  assert.equal(earlier.status, 'verified');
  assert.equal(earlier.head.check, 'ok');
});

test('a record byte changed without recomputing the chain: the chain breaks there', async () => {
  const { text } = await makeExport();
  const all = lines(text);
  const record = base64ToBytes(all[4].record);
  record[record.length - 1] ^= 1;
  all[4].record = bytesToBase64(record);
  assertFailsAt(await verifyExport(join(all)), 4, 'chain');
});

test('events swapped: the sequence breaks at the first one out of place', async () => {
  const { text } = await makeExport();
  const all = lines(text);
  [all[2], all[3]] = [all[3], all[2]];
  assertFailsAt(await verifyExport(join(all)), 2, 'sequence');
});

test('the readable event edited, the record left alone: fails at that event', async () => {
  const { text, rolls } = await makeExport();
  const all = lines(text);
  all[rolls[0].version].event.total += 1;
  const report = await verifyExport(join(all));
  assertFailsAt(report, rolls[0].version, 'event');
  const summary = lines(text);
  summary[rolls[0].version + 1].event.summary_en = 'pikachu rolls a natural 20';
  assertFailsAt(await verifyExport(join(summary)), rolls[0].version + 1, 'event');
});

test('a revealed seed that is not the committed one fails at the reveal', async () => {
  const { text, versionOf } = await makeExport();
  const all = lines(text);
  const at = all.findIndex((l) => l.event.type === 'SeedRevealed');
  // Rewrite the record's seed (same length), chain recomputed: a forger's reveal.
  const record = new TextDecoder('latin1').decode(base64ToBytes(all[at].record)).replace(SEEDS[0], SEEDS[1]);
  all[at].record = bytesToBase64(Uint8Array.from(record, (c) => c.charCodeAt(0)));
  all[at].event.server_seed = SEEDS[1];
  await rechain(all, at);
  const report = await verifyExport(join(all));
  assert.equal(report.status, 'failed');
  // The fault is the reveal's, though the rolls it should unlock come earlier:
  // they are marked bad (not re-derivable from an uncommitted seed), naming it.
  assert.ok(at > versionOf('DiceRolled'));
  assert.equal(report.firstFailure, at);
  assert.equal(report.problems[0].check, 'commitment');
  assert.equal(report.commitments[0].check, 'bad');
  for (const r of report.rolls) {
    assert.equal(r.check, 'bad');
    assert.match(r.problems[0], new RegExp(`revealed for epoch 0 at version ${at} does not match`));
  }
});

test('a stream id changed everywhere, chain and all, is not the battle asked for', async () => {
  const { text } = await makeExport({ stream: 'b-other' });
  assertFailsAt(await verifyExport(text, { stream: 'b-test-battle' }), 0, 'record');
});

test('not an export at all is a format error, not a verdict', async () => {
  await assert.rejects(verifyExport(''), ExportFormatError);
  await assert.rejects(verifyExport('not json\n'), ExportFormatError);
  await assert.rejects(verifyExport('{"stream":"s","version":0}\n'), ExportFormatError);
  await assert.rejects(verifyExport('[1,2]\n'), ExportFormatError);
});

test('a real export written by `battlelog export` (the Rust implementation) verifies', async () => {
  const text = fs.readFileSync(path.join(here, 'fixtures', 'demo-pokemon-closed.jsonl'), 'utf8');
  const report = await verifyExport(text);
  assert.equal(report.status, 'verified', JSON.stringify(report.problems));
  assert.equal(report.rolls.length, 4);
  assert.ok(report.rolls.every((r) => r.check === 'ok'));
  assert.deepEqual(report.commitments.map((c) => [c.check, c.signature]), [['ok', 'ok']]);
  assert.match(report.rollerKey, /^[0-9a-f]{64}$/);
  // No field the exporter shows went unchecked against the record.
  assert.deepEqual(report.events.flatMap((e) => e.unchecked), []);
  const forged = await changeDie(text);
  assertFailsAt(await verifyExport(forged.text), forged.version, 'roll');
});

test('a real export of a battle left open (one roll) is unrevealed', async () => {
  const text = fs.readFileSync(path.join(here, 'fixtures', 'open-pokemon.jsonl'), 'utf8');
  const report = await verifyExport(text);
  assert.equal(report.status, 'unrevealed', JSON.stringify(report.problems));
  assert.deepEqual(report.rolls.map((r) => r.check), ['unrevealed']);
  assert.equal(report.firstFailure, null);
  // Removing its roll is still caught: the chain needs no seed.
  const roll = report.rolls[0].version;
  assertFailsAt(await verifyExport(dropEvent(text, roll).text), roll, 'sequence');
});

test("a §5 trailer is the export's last line: its checks are transparency.test.mjs's; a line after it is no export", async () => {
  const { text, lastVersion } = await makeExport();
  const last = lines(text).at(-1);
  // A trailer whose signatures are junk fails at the version after the last.
  const trailer = JSON.stringify({
    checkpoint: 'battlelog.local/journal\n1\nAAAA\n', log_key: 'battlelog.local/journal+00000000+AQ==',
    head: { stream: last.stream, version: last.version, hash: last.hash }, head_signature: '', leaf_index: 0, inclusion_proof: [],
  });
  const bad = await verifyExport(text + trailer + '\n');
  assertFailsAt(bad, lastVersion + 1, 'checkpoint');
  await assert.rejects(verifyExport(text + trailer + '\n' + JSON.stringify(last) + '\n'), ExportFormatError);
});
