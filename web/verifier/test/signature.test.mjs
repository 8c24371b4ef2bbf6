// Signed commitments (docs/PROTOCOL-signatures.md): the addendum's known
// answer, and exports whose commitments are unsigned, signed by another key
// or by a key other than the published one.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { bytesToHex, commitmentMessage, hasEd25519, hexToBytes, verifyEd25519, verifyExport } from '../verify.js';
import { makeExport, rollerSigner } from '../tools/make-export.mjs';

// docs/PROTOCOL-signatures.md §2, "Known answer".
const KNOWN = {
  masterKey: '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f',
  rollerKey: '7fdf536f36f082a2b3aed8dfe24c88e4386b05c3be0d29a15c2c5f50ee2d4ef0',
  battle: 'duel-42',
  commitment: '022ae2b686069fa53281be76db0738b21ef6bb2777ff35ff5e8420f0e2385e76',
  signature:
    'af37887b2ee48295d037d90f7752af2d4c38804d1ce23bf78b6c4a2446437a9afa65210aed5a9d5b90b3b95f3dbe42803465ccf290d72ad94a97feabce6b6103',
};

test('Node 20 has Ed25519 in WebCrypto, so these tests check signatures for real', async () => {
  assert.equal(await hasEd25519(), true);
});

test("the addendum's known answer: the signed bytes, the key, the signature", async () => {
  const message = commitmentMessage(KNOWN.battle, 0, KNOWN.commitment);
  // 23 + 1 + 7 + 1 + 4 + 64 bytes, as §2 spells them out.
  assert.equal(message.length, 100);
  assert.equal(new TextDecoder().decode(message.subarray(0, 23)), 'battlelog/v1/commitment');
  assert.deepEqual([...message.subarray(31, 36)], [0, 0, 0, 0, 0]);
  assert.equal(await verifyEd25519(hexToBytes(KNOWN.rollerKey), hexToBytes(KNOWN.signature), message), true);
  // The same signature does not hold for another epoch or battle.
  assert.equal(await verifyEd25519(hexToBytes(KNOWN.rollerKey), hexToBytes(KNOWN.signature), commitmentMessage(KNOWN.battle, 1, KNOWN.commitment)), false);
  assert.equal(await verifyEd25519(hexToBytes(KNOWN.rollerKey), hexToBytes(KNOWN.signature), commitmentMessage('duel-43', 0, KNOWN.commitment)), false);
  // And the key derivation of §1 gives the published key (and signature:
  // Ed25519 is deterministic).
  const signer = await rollerSigner(KNOWN.masterKey);
  assert.equal(bytesToHex(signer.publicKey), KNOWN.rollerKey);
  assert.equal(bytesToHex(await signer.sign(message)), KNOWN.signature);
});

test('signed commitments verify, and the report names the roller key', async () => {
  const report = await verifyExport((await makeExport({ midReveal: true })).text);
  assert.equal(report.status, 'verified', JSON.stringify(report.problems));
  assert.deepEqual(report.commitments.map((c) => c.signature), ['ok', 'ok']);
  assert.equal(report.rollerKey, bytesToHex((await rollerSigner()).publicKey));
});

test('an unsigned commitment fails at its event', async () => {
  const { text, versionOf } = await makeExport({ midReveal: true, signers: { 1: null } });
  const report = await verifyExport(text);
  assert.equal(report.status, 'failed');
  assert.equal(report.firstFailure, versionOf('SeedCommitted'));
  assert.equal(report.problems[0].check, 'signature');
  assert.deepEqual(report.commitments.map((c) => c.signature), ['ok', 'unsigned']);
});

test('an epoch signed by another roller key fails at its event', async () => {
  const other = await rollerSigner('ff'.repeat(32));
  const { text, versionOf } = await makeExport({ midReveal: true, signers: { 1: other } });
  const report = await verifyExport(text);
  assert.equal(report.firstFailure, versionOf('SeedCommitted'));
  assert.match(report.problems[0].message, /not the battle's/);
});

test('a signature over another epoch does not verify', async () => {
  const signer = await rollerSigner();
  // Signs epoch 0's bytes for whatever epoch it is asked: a replayed
  // signature. The epoch is the 4 bytes before the 64-digit commitment.
  const asEpochZero = (message) => Uint8Array.from(message).fill(0, message.length - 68, message.length - 64);
  const replaying = { publicKey: signer.publicKey, sign: (message) => signer.sign(asEpochZero(message)) };
  const { text, versionOf } = await makeExport({ midReveal: true, signers: { 1: replaying } });
  const report = await verifyExport(text);
  assert.equal(report.firstFailure, versionOf('SeedCommitted'));
  assert.deepEqual(report.commitments.map((c) => c.signature), ['ok', 'bad']);
});

test('the published roller key, when given, must be the one', async () => {
  const { text } = await makeExport();
  const published = bytesToHex((await rollerSigner()).publicKey);
  assert.equal((await verifyExport(text, { rollerKey: published })).status, 'verified');
  const report = await verifyExport(text, { rollerKey: bytesToHex((await rollerSigner('ff'.repeat(32))).publicKey) });
  assert.equal(report.status, 'failed');
  assert.equal(report.firstFailure, 0);
  assert.match(report.problems[0].message, /not a trusted roller key/);
});
