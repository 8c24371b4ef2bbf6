// Protocol v2's beacon (docs/protocol.md §6.1): drand's
// `bls-unchained-g1-rfc9380` scheme. Round r's signature σ_r is a compressed
// G1 point (48 bytes), a BLS signature over m_r = SHA-256(u64_be(r)) hashed
// to G1 (RFC 9380, DST below); it is valid when e(σ_r, g2) = e(H(m_r), pk),
// pk being the chain's compressed G2 public key (96 bytes). The round's
// randomness is ρ_r = SHA-256(σ_r).
//
// The pairing is the vendored @noble/curves (BLS12-381, its "short
// signatures": signatures in G1, keys in G2), written apart from the
// drand-verify crate the Rust side uses; both are held to
// tests/vectors/v2.json. The SHA-256s are the vendored synchronous one, so a
// round verifies without a promise.
import { hexToBytes } from './bytes.js';
import { sha256 } from './vendor/noble-hashes/sha2.js';
import { bls12_381 } from './vendor/noble-curves/bls12-381.js';

/** The hash-to-curve domain of the scheme, pinned here rather than taken from the library's default. */
export const BEACON_DST = 'BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_';

/** The League of Entropy's quicknet, the beacon production uses (§6.1). */
export const QUICKNET = Object.freeze({
  hash: '52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971',
  public_key:
    '83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a',
  period: 3,
  genesis_time: 1692803367,
});

const MAX_U64 = (1n << 64n) - 1n;
const scheme = bls12_381.shortSignatures;

// A chain's decoded public key, kept per key text: decoding a G2 point
// (with its subgroup check) costs about as much as a few rounds' hashing.
const publicKeys = new Map();

function publicKeyOf(chain) {
  const hex = chain?.public_key;
  let key = publicKeys.get(hex);
  if (key) return key;
  let bytes;
  try {
    bytes = hexToBytes(hex);
  } catch {
    bytes = null;
  }
  if (!bytes || bytes.length !== 96) {
    throw new Error("the beacon's public key is not a compressed G2 point of 96 bytes in hex");
  }
  try {
    key = bls12_381.G2.Point.fromBytes(bytes);
    key.assertValidity();
  } catch (e) {
    throw new Error(`the beacon's public key is not a point of G2: ${e.message}`);
  }
  publicKeys.set(hex, key);
  return key;
}

function checkRound(round) {
  const ok = typeof round === 'bigint' ? round <= MAX_U64 : Number.isSafeInteger(round);
  if (!ok || round < 0) throw new Error(`beacon round ${round} is not a round number (an integer from 1)`);
  if (BigInt(round) === 0n) throw new Error('beacon round 0 does not exist: rounds start at 1');
  return BigInt(round);
}

/** m_r = SHA-256(u64_be(r)): the message round r's signature signs. */
export function roundMessage(round) {
  const r = checkRound(round);
  const be = new Uint8Array(8);
  new DataView(be.buffer).setBigUint64(0, r, false);
  return sha256(be);
}

/**
 * Verifies round `round` of `chain` (§6.1: `{ public_key, … }`, as in
 * QUICKNET) against its signature (hex) and returns its randomness,
 * SHA-256(σ_r) as 32 bytes. Throws an Error naming the round and why when
 * the round, the signature's form or the signature itself is not valid.
 */
export function verifyBeaconRound(chain, round, signatureHex) {
  const message = roundMessage(round);
  const key = publicKeyOf(chain);
  let signatureBytes;
  try {
    signatureBytes = hexToBytes(signatureHex);
  } catch {
    signatureBytes = null;
  }
  if (!signatureBytes || signatureBytes.length !== 48) {
    throw new Error(`the signature of beacon round ${round} is not a compressed G1 point of 48 bytes in hex`);
  }
  let signature;
  try {
    signature = scheme.Signature.fromBytes(signatureBytes);
  } catch (e) {
    throw new Error(`the signature of beacon round ${round} is not a point of G1: ${e.message}`);
  }
  if (!scheme.verify(signature, scheme.hash(message, BEACON_DST), key)) {
    throw new Error(`the signature of beacon round ${round} does not verify under the beacon's public key`);
  }
  return sha256(signatureBytes);
}

function checkChainTimes(chain) {
  const { period, genesis_time: genesis } = chain ?? {};
  if (!Number.isSafeInteger(period) || period <= 0) throw new Error(`the beacon's period ${period} is not a positive integer`);
  if (!Number.isSafeInteger(genesis) || genesis < 0) throw new Error(`the beacon's genesis_time ${genesis} is not a Unix time`);
  return { period, genesis };
}

/** §6.1: round r is published at genesis_time + (r − 1) × period (Unix seconds). */
export function publishedAt(chain, round) {
  const r = checkRound(round);
  const { period, genesis } = checkChainTimes(chain);
  const at = BigInt(genesis) + (r - 1n) * BigInt(period);
  if (at > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`beacon round ${round} is published beyond any time this verifier handles`);
  return Number(at);
}

/**
 * §6.3 step 3: the first round published strictly after T + 1 seconds,
 * r = floor((T + 1 − genesis_time) / period) + 2, or round 1 when T + 1 is
 * before genesis.
 */
export function roundAfter(chain, time) {
  if (!Number.isSafeInteger(time) || time < 0) throw new Error(`time ${time} is not a Unix time in seconds`);
  const { period, genesis } = checkChainTimes(chain);
  if (time + 1 < genesis) return 1;
  return Math.floor((time + 1 - genesis) / period) + 2;
}
