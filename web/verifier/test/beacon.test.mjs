// Protocol v2's beacon (docs/protocol.md §6.1, §6.3 step 3) in the browser
// verifier, held to vectors/v2.json: quicknet's known round and the round it
// refuses, the development key's rounds, every roll's beacon signature and
// the round rule — the same cases the Rust crates/beacon passes, with
// another BLS12-381 implementation. The file is required: a missing file
// fails the run, never skips it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { QUICKNET, bytesToHex, publishedAt, roundAfter, verifyBeaconRound } from '../verify.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const vectorsDir = process.env.BATTLELOG_VECTORS || path.join(repoRoot, 'tests', 'vectors');
const vectorsFile = path.join(vectorsDir, 'v2.json');
if (!fs.existsSync(vectorsFile)) {
  throw new Error(`${vectorsFile} is missing: set BATTLELOG_VECTORS to the directory holding v2.json`);
}
const vectors = JSON.parse(fs.readFileSync(vectorsFile, 'utf8'));
const quicknet = vectors.quicknet;
const dev = vectors.dev_beacon;
const chains = { quicknet, dev };

test('the pinned quicknet is the one of the vectors (§6.1)', () => {
  for (const field of ['hash', 'public_key', 'period', 'genesis_time']) {
    assert.equal(QUICKNET[field], quicknet[field], field);
  }
});

test(`quicknet's known round ${quicknet.known_answer.round} verifies, with its randomness`, () => {
  const { round, signature, randomness } = quicknet.known_answer;
  assert.equal(bytesToHex(verifyBeaconRound(QUICKNET, round, signature)), randomness);
});

for (const { round, signature } of quicknet.not_valid) {
  test(`quicknet refuses round ${round} with signature ${signature.slice(0, 16)}…`, () => {
    assert.throws(() => verifyBeaconRound(QUICKNET, round, signature), {
      message: new RegExp(`round ${round} does not verify`),
    });
  });
}

for (const { round, signature, randomness } of dev.rounds) {
  test(`the development beacon's round ${round} verifies, with its randomness`, () => {
    assert.equal(bytesToHex(verifyBeaconRound(dev, round, signature)), randomness);
  });

  test(`quicknet refuses the development beacon's round ${round}`, () => {
    assert.throws(() => verifyBeaconRound(QUICKNET, round, signature), { message: new RegExp(`round ${round} does not verify`) });
  });

  test(`the development beacon refuses its round ${round}'s signature for round ${round + 1}`, () => {
    assert.throws(() => verifyBeaconRound(dev, round + 1, signature), {
      message: new RegExp(`round ${round + 1} does not verify`),
    });
  });
}

for (const roll of vectors.rolls) {
  test(`the beacon signature of roll nonce ${roll.nonce} (${roll.beacon} round ${roll.round}) verifies to its randomness`, () => {
    const chain = chains[roll.beacon];
    assert.ok(chain, `a roll on an unknown beacon ${roll.beacon}`);
    assert.equal(bytesToHex(verifyBeaconRound(chain, roll.round, roll.beacon_signature)), roll.randomness);
  });
}

for (const { T, genesis_time, period, round } of vectors.rounds) {
  test(`the round after T=${T} (genesis ${genesis_time}, period ${period}) is ${round} (§6.3 step 3)`, () => {
    const chain = { genesis_time, period };
    assert.equal(roundAfter(chain, T), round);
    // "the first round published strictly after T + 1"
    assert.ok(publishedAt(chain, round) > T + 1, 'published after T + 1');
    if (round > 1) assert.ok(publishedAt(chain, round - 1) <= T + 1, 'the round before is not');
  });
}

test('round 1 is published at genesis, each next one a period later (§6.1)', () => {
  assert.equal(publishedAt(QUICKNET, 1), 1692803367);
  assert.equal(publishedAt(QUICKNET, 2), 1692803370);
  assert.equal(publishedAt(QUICKNET, quicknet.known_answer.round), 1692803367 + (657413 - 1) * 3);
});

test('before genesis, the round after a time is round 1', () => {
  assert.equal(roundAfter(QUICKNET, 0), 1);
  assert.equal(roundAfter(QUICKNET, QUICKNET.genesis_time - 2), 1);
  assert.equal(roundAfter(QUICKNET, QUICKNET.genesis_time - 1), 2);
});

test('malformed rounds are refused, naming the round', () => {
  const { signature } = quicknet.known_answer;
  assert.throws(() => verifyBeaconRound(QUICKNET, 0, signature), { message: /round 0 does not exist/ });
  for (const round of [-1, 1.5, '657413', null, Number.MAX_SAFE_INTEGER + 1, 1n << 64n]) {
    assert.throws(() => verifyBeaconRound(QUICKNET, round, signature), { message: /is not a round number/ }, String(round));
  }
  assert.throws(() => publishedAt(QUICKNET, 0), { message: /round 0/ });
});

test('malformed signatures are refused, naming the round and the reason', () => {
  const { round, signature } = quicknet.known_answer;
  const form = new RegExp(`round ${round} is not a compressed G1 point of 48 bytes in hex`);
  for (const bad of ['', signature.slice(2), `${signature}00`, `${signature.slice(0, -1)}g`, `${signature.slice(0, -1)}`, 42, null]) {
    assert.throws(() => verifyBeaconRound(QUICKNET, round, bad), { message: form }, String(bad));
  }
  // 48 bytes, but no point of G1: the compression flag cleared, then x = p (not a field element).
  const uncompressed = (parseInt(signature.slice(0, 2), 16) & 0x7f).toString(16).padStart(2, '0') + signature.slice(2);
  assert.throws(() => verifyBeaconRound(QUICKNET, round, uncompressed), { message: new RegExp(`round ${round} is not a point of G1`) });
  const p = '1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab';
  const xIsP = (parseInt(p.slice(0, 2), 16) | 0x80).toString(16) + p.slice(2);
  assert.throws(() => verifyBeaconRound(QUICKNET, round, xIsP), { message: new RegExp(`round ${round} is not a point of G1`) });
  // The point at infinity is a G1 encoding, and never a valid signature.
  const infinity = `c0${'00'.repeat(47)}`;
  assert.throws(() => verifyBeaconRound(QUICKNET, round, infinity), { message: new RegExp(`round ${round}`) });
  // One bit of the valid signature flipped.
  const flipped = signature.slice(0, -2) + (parseInt(signature.slice(-2), 16) ^ 1).toString(16).padStart(2, '0');
  assert.throws(() => verifyBeaconRound(QUICKNET, round, flipped), { message: new RegExp(`round ${round}`) });
});

test("a malformed beacon key is refused, and a chain's period must be positive", () => {
  const { round, signature } = quicknet.known_answer;
  for (const public_key of [undefined, '', QUICKNET.public_key.slice(2), `${QUICKNET.public_key}00`, 'zz'.repeat(96)]) {
    assert.throws(() => verifyBeaconRound({ ...QUICKNET, public_key }, round, signature), { message: /public key/ }, String(public_key));
  }
  // A G1 signature is no G2 key.
  assert.throws(() => verifyBeaconRound({ ...QUICKNET, public_key: signature.repeat(2) }, round, signature), { message: /public key/ });
  assert.throws(() => roundAfter({ ...QUICKNET, period: 0 }, 1692803367), { message: /period 0/ });
  assert.throws(() => roundAfter(QUICKNET, -1), { message: /time -1/ });
  assert.throws(() => publishedAt({ ...QUICKNET, genesis_time: '1692803367' }, 2), { message: /genesis_time/ });
});
