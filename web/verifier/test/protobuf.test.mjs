// The record reader's varints: the Number fast path (up to 7 bytes) and the
// BigInt one agree with the encoder on every size, up to all 64 bits; a
// truncated or over-long varint is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { RecordDecodeError, protobufFields } from '../verify.js';
import { bytesField, varintField } from '../tools/protobuf.mjs';

test('varints of every length read back exactly', () => {
  const values = [1, 127, 128, 300, 2 ** 28, 2 ** 35, 2 ** 49 - 1, 2 ** 49, 2 ** 53 - 1, -1];
  for (const v of values) {
    const [field] = protobufFields(varintField(2, v));
    assert.equal(field.value, BigInt.asUintN(64, BigInt(v)), String(v));
  }
  // A key of four bytes (field 2^25 − 1), and a length.
  const [big] = protobufFields(bytesField(2 ** 25 - 1, 'abc'));
  assert.equal(big.number, 2 ** 25 - 1);
  assert.equal(new TextDecoder().decode(big.value), 'abc');
});

test('a truncated or over-long varint, or a length past the end, is refused', () => {
  for (const bytes of [[0x08, 0x80], [0x08, ...Array(10).fill(0xff), 0x01], [0x12, 0x05, 0x61]]) {
    assert.throws(() => protobufFields(Uint8Array.from(bytes)), RecordDecodeError, JSON.stringify(bytes));
  }
});
