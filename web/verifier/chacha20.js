// ChaCha20 (docs/protocol.md §2: 20 rounds, the original layout — 64-bit block
// counter in words 12–13, 64-bit nonce in words 14–15) and the die face.
// No dependencies.

const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]; // "expand 32-byte k"

function rotl(x, n) {
  return ((x << n) | (x >>> (32 - n))) >>> 0;
}

function quarterRound(s, a, b, c, d) {
  s[a] = (s[a] + s[b]) >>> 0; s[d] = rotl(s[d] ^ s[a], 16);
  s[c] = (s[c] + s[d]) >>> 0; s[b] = rotl(s[b] ^ s[c], 12);
  s[a] = (s[a] + s[b]) >>> 0; s[d] = rotl(s[d] ^ s[a], 8);
  s[c] = (s[c] + s[d]) >>> 0; s[b] = rotl(s[b] ^ s[c], 7);
}

/**
 * One ChaCha20 block: 16 output words (the keystream's little-endian u32s).
 * `tail` is state words 12..15 as given, so the same function serves the
 * original layout (counter lo, counter hi, nonce lo, nonce hi) and RFC 8439's
 * (counter, nonce0, nonce1, nonce2) — the tests use the RFC's vectors.
 */
export function chacha20Block(key, tail) {
  if (key.length !== 32) throw new TypeError('a ChaCha20 key is 32 bytes');
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const input = new Uint32Array(16);
  input.set(SIGMA, 0);
  for (let i = 0; i < 8; i++) input[4 + i] = view.getUint32(4 * i, true);
  for (let i = 0; i < 4; i++) input[12 + i] = tail[i] >>> 0;
  const s = Uint32Array.from(input);
  for (let round = 0; round < 10; round++) {
    // A column round then a diagonal round: 20 rounds in all.
    quarterRound(s, 0, 4, 8, 12);
    quarterRound(s, 1, 5, 9, 13);
    quarterRound(s, 2, 6, 10, 14);
    quarterRound(s, 3, 7, 11, 15);
    quarterRound(s, 0, 5, 10, 15);
    quarterRound(s, 1, 6, 11, 12);
    quarterRound(s, 2, 7, 8, 13);
    quarterRound(s, 3, 4, 9, 14);
  }
  for (let i = 0; i < 16; i++) s[i] = (s[i] + input[i]) >>> 0;
  return s;
}

/** The random words of one roll: the keystream for `rollKey` and `nonce`, one u32 at a time. */
export class RollWords {
  constructor(rollKey, nonce) {
    const n = BigInt.asUintN(64, BigInt(nonce));
    this.key = rollKey;
    this.nonceLo = Number(n & 0xffffffffn);
    this.nonceHi = Number(n >> 32n);
    this.counter = 0n; // 64-bit block counter, from 0
    this.block = null;
    this.index = 16;
  }

  next() {
    if (this.index === 16) {
      const c = BigInt.asUintN(64, this.counter);
      this.block = chacha20Block(this.key, [Number(c & 0xffffffffn), Number(c >> 32n), this.nonceLo, this.nonceHi]);
      this.counter += 1n;
      this.index = 0;
    }
    return this.block[this.index++];
  }
}

const TWO_POW_32 = 4294967296;

/** §2: one die of `faces` faces by rejection sampling, no modulo bias. */
export function dieFace(nextWord, faces) {
  // Doubles hold every integer below 2^53 exactly, so this is exact.
  const limit = TWO_POW_32 - (TWO_POW_32 % faces);
  for (;;) {
    const x = nextWord();
    if (x < limit) return 1 + (x % faces);
  }
}
