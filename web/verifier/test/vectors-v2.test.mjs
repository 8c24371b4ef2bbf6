// Every v2 roll of vectors/v2.json (docs/protocol.md §6.3 step 4), computed
// by an independent implementation: the browser verifier's v2 roll key from
// the seed, the client seed, the beacon round and its randomness, then the
// same words and dice as v1 draws them. The file is required: a missing
// file fails the run, never skips it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  RollWords, bytesToHex, deriveRollWithKey, hexToBytes, parseExpression, rollKeyOf, rollKeyOfV2,
} from '../verify.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const vectorsDir = process.env.BATTLELOG_VECTORS || path.join(repoRoot, 'tests', 'vectors');
const vectorsFile = path.join(vectorsDir, 'v2.json');
if (!fs.existsSync(vectorsFile)) {
  throw new Error(`${vectorsFile} is missing: set BATTLELOG_VECTORS to the directory holding v2.json`);
}
const vectors = JSON.parse(fs.readFileSync(vectorsFile, 'utf8'));

test('the v2 vectors are for protocol v2 and hold rolls', () => {
  assert.match(vectors.protocol, /^battlelog\/v2/);
  assert.ok(vectors.rolls.length > 0);
});

for (const v of vectors.rolls) {
  test(`v2 roll ${JSON.stringify(v.notation)} nonce ${v.nonce} at round ${v.round} of ${v.beacon}`, async () => {
    const key = await rollKeyOfV2(hexToBytes(v.server_seed), v.client_seed, v.round, v.randomness);
    assert.equal(bytesToHex(key), v.roll_key, 'roll key');
    const words = new RollWords(key, v.nonce);
    assert.deepEqual(v.first_words.map(() => words.next()), v.first_words, 'first words');
    const derived = deriveRollWithKey(key, v.nonce, parseExpression(v.notation));
    assert.equal(derived.total, v.total, 'total');
    assert.deepEqual(derived.dice, v.dice, 'dice, in draw order, with their flags');
  });
}

test('a v2 key is never the v1 key of the same seed', async () => {
  const v = vectors.rolls[0];
  const v1 = await rollKeyOf(hexToBytes(v.server_seed), v.client_seed);
  const v2 = await rollKeyOfV2(hexToBytes(v.server_seed), v.client_seed, v.round, v.randomness);
  assert.notEqual(bytesToHex(v1), bytesToHex(v2));
});
