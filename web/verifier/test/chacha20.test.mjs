// ChaCha20 and the die draw of docs/protocol.md §2, against published vectors
// (RFC 8439) and against OpenSSL through node:crypto — two implementations
// that share nothing with verify.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';

import { RollWords, chacha20Block, dieFace } from '../verify.js';

function wordsToHex(words) {
  const bytes = new Uint8Array(words.length * 4);
  const view = new DataView(bytes.buffer);
  words.forEach((w, i) => view.setUint32(4 * i, w, true));
  return Buffer.from(bytes).toString('hex');
}

function u64le(n) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
}

test('RFC 8439 §2.3.2: the block function test vector', () => {
  // Key 00:01:…:1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00, block count 1.
  // The RFC's layout puts the 32-bit counter in word 12 and the nonce in
  // words 13–15 (little-endian), which is how they are passed here.
  const key = Uint8Array.from({ length: 32 }, (_, i) => i);
  const block = chacha20Block(key, [1, 0x09000000, 0x4a000000, 0]);
  assert.equal(
    wordsToHex(block),
    '10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e' +
      'd2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e',
  );
});

test('RFC 8439 Appendix A.1, test vectors #1 and #2: zero key, zero nonce, blocks 0 and 1', () => {
  // With a zero nonce the original layout (64-bit counter, 64-bit nonce)
  // and the RFC's coincide, so these are also the first 32 words of the
  // roll stream for an all-zero roll key and nonce 0.
  const words = new RollWords(new Uint8Array(32), 0);
  const stream = Array.from({ length: 32 }, () => words.next());
  assert.equal(
    wordsToHex(stream.slice(0, 16)),
    '76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7' +
      'da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586',
  );
  assert.equal(
    wordsToHex(stream.slice(16)),
    '9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed' +
      '29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f',
  );
});

// OpenSSL's "chacha20" takes a 16-byte IV that fills state words 12–15 as
// they are, so u64_le(counter) || u64_le(nonce) is exactly the original
// layout of docs/protocol.md §2, one block at a time.
function opensslBlock(key, counter, nonce) {
  const cipher = crypto.createCipheriv('chacha20', Buffer.from(key), Buffer.concat([u64le(counter), u64le(nonce)]));
  return cipher.update(Buffer.alloc(64)).toString('hex');
}

test('the roll stream puts the nonce, little-endian, in words 14–15 (checked with OpenSSL)', () => {
  const key = Uint8Array.from({ length: 32 }, (_, i) => (i * 37 + 11) & 0xff);
  const nonce = 0x0123456789abcdefn;
  const words = new RollWords(key, nonce);
  for (let counter = 0; counter < 3; counter++) {
    const block = Array.from({ length: 16 }, () => words.next());
    assert.equal(wordsToHex(block), opensslBlock(key, counter, nonce), `block ${counter}`);
  }
});

test('the 64-bit block counter carries from word 12 into word 13 (checked with OpenSSL)', () => {
  const key = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
  const words = new RollWords(key, 7);
  words.counter = 0xffffffffn; // as if 2^32 − 1 blocks had been used
  const last32 = Array.from({ length: 16 }, () => words.next());
  const first33 = Array.from({ length: 16 }, () => words.next());
  assert.equal(wordsToHex(last32), opensslBlock(key, 0xffffffffn, 7));
  assert.equal(wordsToHex(first33), opensslBlock(key, 0x100000000n, 7));
});

function scripted(words) {
  let i = 0;
  return () => {
    assert.ok(i < words.length, 'the die asked for more words than scripted');
    return words[i++];
  };
}

test('a die is 1 + (x mod s) for x below the limit (docs/protocol.md §2)', () => {
  assert.equal(dieFace(scripted([0]), 6), 1);
  assert.equal(dieFace(scripted([5]), 6), 6);
  assert.equal(dieFace(scripted([6]), 6), 1);
  // 2^32 mod 6 = 4, so the limit is 4294967292 and 4294967291 ≡ 5 (mod 6).
  assert.equal(dieFace(scripted([4294967291]), 6), 6);
  assert.equal(dieFace(scripted([123456789]), 1), 1);
});

test('words at or above the limit are discarded, never folded in', () => {
  // d6: limit 4294967292; the two words at and above it are skipped, 7 → 2.
  const words = scripted([4294967292, 4294967295, 7]);
  assert.equal(dieFace(words, 6), 2);
  // d1000000: 2^32 mod 10^6 = 967296, limit 4294000000.
  assert.equal(dieFace(scripted([4293999999]), 1000000), 1000000);
  assert.equal(dieFace(scripted([4294000000, 41]), 1000000), 42);
  // d3 (fudge): 2^32 mod 3 = 1, limit 4294967295 — only the top word is refused.
  assert.equal(dieFace(scripted([4294967295, 4294967294]), 3), 1 + (4294967294 % 3));
  // Powers of two divide 2^32: nothing is ever refused.
  assert.equal(dieFace(scripted([4294967295]), 1024), 1024);
});
