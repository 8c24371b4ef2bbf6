// Every known-answer case of vectors/rolls.json, computed by an independent
// implementation: the JavaScript verifier must agree with each field. The
// file is required — a missing file fails the run, it is never skipped,
// since a silently skipped vector check would make CI lie.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  DiceExpressionError, RollWords, bytesToHex, deriveRoll, deriveServerSeed, commitmentOf,
  evaluateExpression, hexToBytes, parseExpression, rollKeyOf, verifyRoll,
} from '../verify.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const vectorsDir = process.env.BATTLELOG_VECTORS || path.join(repoRoot, 'tests', 'vectors');
const vectorsFile = path.join(vectorsDir, 'rolls.json');
if (!fs.existsSync(vectorsFile)) {
  // Thrown at load time: node --test reports the file as failed.
  throw new Error(`${vectorsFile} is missing: set BATTLELOG_VECTORS to the directory holding rolls.json`);
}
const vectors = JSON.parse(fs.readFileSync(vectorsFile, 'utf8'));

test('the vectors are for this protocol and not empty', () => {
  assert.equal(vectors.protocol, 'battlelog/v1');
  assert.ok(vectors.vectors.length > 0, 'no roll vectors');
  assert.ok(vectors.invalid.length > 0, 'no invalid expressions');
});

for (const v of vectors.vectors) {
  test(`vector ${JSON.stringify(v.notation)} nonce ${v.nonce}`, async () => {
    const seed = hexToBytes(v.server_seed);
    assert.equal(await commitmentOf(seed), v.commitment, 'commitment');
    assert.equal(bytesToHex(await rollKeyOf(seed, v.client_seed)), v.roll_key, 'roll key');
    const words = new RollWords(await rollKeyOf(seed, v.client_seed), v.nonce);
    assert.deepEqual(v.first_words.map(() => words.next()), v.first_words, 'first words');
    const derived = await deriveRoll(v.server_seed, v.client_seed, v.nonce, v.notation);
    assert.equal(derived.error, null, 'no arithmetic error');
    assert.equal(derived.total, v.total, 'total');
    assert.deepEqual(derived.dice, v.dice, 'dice, in draw order, with their flags');
    // verifyRoll is what other tools call: it must say the same.
    const checked = await verifyRoll(v);
    assert.deepEqual(checked.mismatches, []);
    assert.equal(checked.ok, true);
  });
}

for (const source of vectors.invalid) {
  test(`invalid expression ${JSON.stringify(source)} is refused`, () => {
    // Most are refused by the parser; a constant division by zero (`1/0`)
    // parses and fails when evaluated, before any die could matter.
    let refused;
    try {
      const parsed = parseExpression(source);
      refused = evaluateExpression(parsed, () => 0).error;
    } catch (error) {
      refused = error;
    }
    assert.ok(refused instanceof DiceExpressionError, `${JSON.stringify(source)} was accepted`);
    assert.ok(refused.message.length > 0);
  });
}

test('a tampered vector is caught (verifyRoll is not a rubber stamp)', async () => {
  const v = structuredClone(vectors.vectors[0]);
  v.dice[0].value = (v.dice[0].value % v.dice[0].sides) + 1;
  v.total += 1;
  const checked = await verifyRoll(v);
  assert.equal(checked.ok, false);
  assert.ok(checked.mismatches.some((m) => m.startsWith('die 1: value')));
});

test('seed derivation: HMAC-SHA256 of the master key (docs/protocol.md §1)', async () => {
  const s = vectors.seed_derivation;
  const seed = await deriveServerSeed(s.master_key, s.battle_id, s.epoch);
  assert.equal(bytesToHex(seed), s.server_seed);
  assert.equal(await commitmentOf(seed), s.commitment);
});
