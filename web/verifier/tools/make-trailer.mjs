// A tiny transparency log for tests (docs/protocol.md §5), built apart from
// transparency.js so that each checks the other: hashes with node:crypto,
// the tree and its proofs by RFC 6962 §2.1's recursive definitions (MTH,
// PATH), keys, signed notes and heads with the vendored @noble/ed25519.
//
//   node tools/make-trailer.mjs EXPORT_IN EXPORT_OUT [--seed HEX] [--origin O]
// appends a valid trailer to an export (its last event as leaf 3 of a log
// of 6 records, the others other streams') and prints the log's verifier key.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import * as ed from '../vendor/noble-ed25519/index.js';

export const ORIGIN = 'battlelog.local/journal';
export const SEED = '4c4f47204b4559205345454420464f522054455354530000000000000000cafe';

const sha256 = (...parts) => new Uint8Array(createHash('sha256').update(Buffer.concat(parts.map((p) => Buffer.from(p)))).digest());
const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const u64le = (n) => {
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE(BigInt(n));
  return out;
};

/** §5's leaf input, byte by byte from the text. */
export function leafInputOf(stream, version, hash) {
  return Buffer.concat([Buffer.from('battlelog/v1/leaf'), Buffer.from([0]), Buffer.from(stream, 'utf8'), Buffer.from([0]), u64le(version), Buffer.from(hash)]);
}

export const leafHashOf = (stream, version, hash) => sha256([0], leafInputOf(stream, version, hash));
const node = (l, r) => sha256([1], l, r);

/** The largest power of two smaller than n (n > 1). */
function split(n) {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** RFC 6962 §2.1: MTH(D[n]) over leaf hashes. */
export function mth(leaves) {
  if (leaves.length === 0) return sha256([]);
  if (leaves.length === 1) return leaves[0];
  const k = split(leaves.length);
  return node(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

/** RFC 6962 §2.1.1: PATH(m, D[n]), leaf to root. */
export function path(m, leaves) {
  if (leaves.length <= 1) return [];
  const k = split(leaves.length);
  return m < k ? [...path(m, leaves.slice(0, k)), mth(leaves.slice(k))] : [...path(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}

/** A log key from a 32-byte seed: { origin, seed, publicKey, keyId, verifierKey, sign(bytes) }. */
export async function logKey(seedHex = SEED, origin = ORIGIN) {
  const seed = Buffer.from(seedHex, 'hex');
  const publicKey = await ed.getPublicKeyAsync(seed);
  const keyId = sha256(Buffer.from(origin), [0x0a, 0x01], publicKey).subarray(0, 4);
  return {
    origin, seed, publicKey, keyId,
    verifierKey: `${origin}+${Buffer.from(keyId).toString('hex')}+${b64(Buffer.concat([Buffer.from([1]), publicKey]))}`,
    sign: async (bytes) => ed.signAsync(bytes, seed),
  };
}

/** A C2SP signed note of `text` by each key (C2SP: a blank line, then "— name base64(key id || sig)"). */
export async function signNote(text, ...keys) {
  let lines = '';
  for (const key of keys) lines += `\u2014 ${key.origin} ${b64(Buffer.concat([key.keyId, await key.sign(Buffer.from(text, 'utf8'))]))}\n`;
  return `${text}\n${lines}`;
}

/** §5's signed head message. */
export function headMessageOf(stream, version, hash, treeSize) {
  return Buffer.concat([Buffer.from('battlelog/v1/head'), Buffer.from([0]), Buffer.from(stream, 'utf8'), Buffer.from([0]), u64le(version), Buffer.from(hash), u64le(treeSize)]);
}

/**
 * A trailer for the head (stream, version, hash hex) as leaf `index` of a
 * log of `size` records (the others made up), signed by `key`.
 */
export async function makeTrailer({ stream, version, hash }, key, { index = 3, size = 6 } = {}) {
  const head = Buffer.from(hash, 'hex');
  const leaves = [];
  for (let i = 0; i < size; i++) leaves.push(i === index ? leafHashOf(stream, version, head) : leafHashOf(`other-${i}`, i, sha256(Buffer.from(`r${i}`))));
  const root = mth(leaves);
  const checkpoint = await signNote(`${key.origin}\n${size}\n${b64(root)}\n`, key);
  return {
    checkpoint,
    log_key: key.verifierKey,
    head: { stream, version, hash },
    head_signature: b64(await key.sign(headMessageOf(stream, version, head, size))),
    leaf_index: index,
    inclusion_proof: path(index, leaves).map(b64),
  };
}

/** The last event line of an export text. */
export function lastEvent(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l)).filter((l) => 'version' in l);
  return lines.at(-1);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [input, output, ...rest] = process.argv.slice(2);
  const option = (name, fallback) => (rest.includes(name) ? rest[rest.indexOf(name) + 1] : fallback);
  const text = readFileSync(input, 'utf8');
  const key = await logKey(option('--seed', SEED), option('--origin', ORIGIN));
  const trailer = await makeTrailer(lastEvent(text), key);
  writeFileSync(output, `${text.replace(/\s*$/, '')}\n${JSON.stringify(trailer)}\n`);
  console.log(key.verifierKey);
}
