// The hash chain's SHA-256 (vendored @noble/hashes, synchronous): FIPS
// 180-2's examples, and the same digest as WebCrypto's on inputs of every
// length around the 64-byte block and its padding.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { bytesToHex, chainHash, sha256 } from '../verify.js';

const utf8 = new TextEncoder();

test("FIPS 180-2's SHA-256 examples, as the chain computes them", () => {
  // chainHash(previous, record) hashes previous || record: an empty
  // previous gives SHA-256(record).
  const empty = new Uint8Array(0);
  assert.equal(bytesToHex(chainHash(empty, utf8.encode('abc'))), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(
    bytesToHex(chainHash(empty, utf8.encode('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))),
    '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
  );
  assert.equal(bytesToHex(chainHash(empty, empty)), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
});

test('the same digest as WebCrypto for every length from 0 to 300 bytes', async () => {
  for (let n = 0; n <= 300; n++) {
    const record = Uint8Array.from({ length: n }, (_, i) => (i * 31 + n) & 0xff);
    const previous = Uint8Array.from({ length: 32 }, (_, i) => i);
    const both = new Uint8Array(32 + n);
    both.set(previous);
    both.set(record, 32);
    assert.equal(bytesToHex(chainHash(previous, record)), bytesToHex(await sha256(both)), `length ${n}`);
  }
});
