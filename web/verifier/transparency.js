// The journal's transparency log (docs/protocol.md §5), checked from an export's
// trailer line: written from §5, RFC 9162 §2.1 and the C2SP signed-note and
// tlog-checkpoint specifications, not from the Rust code, so that a mistake
// in either shows up as a disagreement.
//
//   leafInput / leafHash / nodeHash   §5's leaf, RFC 6962 hashing (0x00 / 0x01)
//   verifyInclusion                   RFC 9162 §2.1.3.2
//   keyIdOf / parseVerifierKey        C2SP signed-note verifier keys (Ed25519, type 0x01)
//   parseNote / openNote              a C2SP signed note and its signature
//   openCheckpoint                    a signed note holding a tlog-checkpoint
//   headMessage                       the bytes of §5's signed head
//   checkTrailer                      everything a verifier checks of a trailer
//
// Hashes are the vendored synchronous SHA-256 (a proof is a few dozen of
// them); Ed25519 is signatures.js's (WebCrypto, else the vendored JS): a
// signature is never left unchecked. Tree sizes and indices are BigInt
// inside (they are u64 in the protocol).
import { base64ToBytes, bytesEqual, bytesToBase64, bytesToHex, concatBytes, hexToBytes, utf8 } from './bytes.js';
import { verifyEd25519 } from './signatures.js';
import { sha256 } from './vendor/noble-hashes/sha2.js';

/** A trailer, checkpoint, key or proof that does not hold; `what` names which check failed. */
export class TransparencyError extends Error {
  constructor(what, message) {
    super(message);
    this.name = 'TransparencyError';
    this.what = what;
  }
}

const U64_MAX = (1n << 64n) - 1n;

function u64le(value) {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(value), true);
  return out;
}

/** A u64 from a JSON number or BigInt, or null when it is not one. */
function toU64(value) {
  if (typeof value === 'bigint') return value >= 0n && value <= U64_MAX ? value : null;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  return null;
}

/** §5: "battlelog/v1/leaf" || 0x00 || stream id || 0x00 || u64_le(version) || h(version). */
export function leafInput(streamId, version, chainHash) {
  if (chainHash.length !== 32) throw new TransparencyError('malformed', 'a chain hash is 32 bytes');
  return concatBytes(utf8.encode('battlelog/v1/leaf'), [0], utf8.encode(streamId), [0], u64le(version), chainHash);
}

/** RFC 6962 leaf hash: SHA-256(0x00 || leaf input). */
export function leafHash(streamId, version, chainHash) {
  return sha256(concatBytes([0], leafInput(streamId, version, chainHash)));
}

/** RFC 6962 interior node: SHA-256(0x01 || left || right). */
export function nodeHash(left, right) {
  return sha256(concatBytes([1], left, right));
}

/**
 * RFC 9162 §2.1.3.2: whether `proof` (32-byte hashes, leaf to root) shows
 * the leaf hash `leaf` at `index` in the tree of `size` leaves whose root is
 * `root`. Throws TransparencyError('inclusion-proof', why) when it does not.
 */
export function verifyInclusion(index, size, leaf, proof, root) {
  const fail = (message) => {
    throw new TransparencyError('inclusion-proof', message);
  };
  const leafIndex = toU64(index);
  const treeSize = toU64(size);
  if (leafIndex === null || treeSize === null) fail('the leaf index and the tree size must be unsigned 64-bit integers');
  if (leafIndex >= treeSize) fail(`leaf index ${leafIndex} is not below the tree size ${treeSize}`);
  if (!proof.every((p) => p instanceof Uint8Array && p.length === 32)) fail('every hash of the proof is 32 bytes');
  let fn = leafIndex;
  let sn = treeSize - 1n;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0n) fail(`the proof has ${proof.length} hashes: too many for leaf ${leafIndex} of ${treeSize}`);
    if ((fn & 1n) === 1n || fn === sn) {
      r = nodeHash(p, r);
      if ((fn & 1n) === 0n) {
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) fail(`the proof has ${proof.length} hashes: too few for leaf ${leafIndex} of ${treeSize}`);
  if (!bytesEqual(r, root)) fail(`the proof of leaf ${leafIndex} does not lead to the root of the tree of ${treeSize}`);
}

/** C2SP signed-note key id: the first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key). */
export function keyIdOf(name, publicKey) {
  return sha256(concatBytes(utf8.encode(name), [0x0a, 0x01], publicKey)).subarray(0, 4);
}

/** A key name (and a checkpoint origin): non-empty, no whitespace, no '+'. */
function validName(name) {
  return typeof name === 'string' && name.length > 0 && !/[\s+]/u.test(name);
}

/**
 * A C2SP signed-note verifier key, `<name>+<key id, 8 hex>+<base64(0x01 ||
 * public key)>`, as { name, keyId (4 bytes), publicKey (32 bytes), text }.
 * Throws TransparencyError('malformed', why) when it is not an Ed25519 one
 * whose key id matches its key.
 */
export function parseVerifierKey(text) {
  const fail = (message) => {
    throw new TransparencyError('malformed', `log_key ${JSON.stringify(String(text).slice(0, 120))}: ${message}`);
  };
  if (typeof text !== 'string') fail('not a string');
  const trimmed = text.trim();
  // The name and the id hold no '+'; the base64 key may (as Go's note
  // package reads it: cut at the first two).
  const first = trimmed.indexOf('+');
  const second = first < 0 ? -1 : trimmed.indexOf('+', first + 1);
  if (second < 0) fail('not <name>+<key id>+<key>');
  const [name, idHex, keyText] = [trimmed.slice(0, first), trimmed.slice(first + 1, second), trimmed.slice(second + 1)];
  if (!validName(name)) fail('the name is empty or holds a space');
  // Go's note package reads the id as hex in either case: so does this.
  if (!/^[0-9a-fA-F]{8}$/.test(idHex)) fail('the key id is not 8 hex digits');
  let key;
  try {
    key = base64ToBytes(keyText);
  } catch {
    fail('the key is not base64');
  }
  if (key.length !== 33 || key[0] !== 0x01) fail('not an Ed25519 key (0x01 and 32 bytes)');
  const publicKey = key.subarray(1);
  if (bytesToHex(keyIdOf(name, publicKey)) !== idHex.toLowerCase()) fail('the key id does not match the key');
  return { name, keyId: hexToBytes(idHex), publicKey, text: trimmed };
}

/**
 * A C2SP signed note split into its text (up to and including the newline
 * before the blank line) and its signature lines ({ name, keyId, signature }).
 * Throws TransparencyError('malformed', why).
 */
/** The largest note read, in bytes (as the Rust audit's MAX_NOTE_BYTES). */
export const MAX_NOTE_BYTES = 16 * 1024;
/** The most signature lines a note may carry (MAX_NOTE_SIGNATURES). */
export const MAX_NOTE_SIGNATURES = 100;

export function parseNote(note) {
  const fail = (message) => {
    throw new TransparencyError('malformed', `checkpoint: ${message}`);
  };
  if (typeof note !== 'string') fail('not a string');
  // The Rust audit's limits (battlelog-tlog's MAX_NOTE_BYTES and
  // MAX_NOTE_SIGNATURES): a note of a hundred thousand signature lines must
  // not cost as many Ed25519 checks here either.
  if (utf8.encode(note).length > MAX_NOTE_BYTES) fail(`larger than ${MAX_NOTE_BYTES} bytes`);
  const split = note.lastIndexOf('\n\n');
  if (split < 0) fail('no blank line before the signatures');
  const text = note.slice(0, split + 1);
  const tail = note.slice(split + 2);
  // C2SP: the text is UTF-8 with no control characters but newlines.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f\u007f]/.test(note)) fail('a control character other than a newline');
  if (!tail.endsWith('\n')) fail('the last signature line does not end with a newline');
  const signatures = [];
  for (const line of tail.slice(0, -1).split('\n')) {
    const found = /^\u2014 (\S+) (\S+)$/u.exec(line);
    if (signatures.length === MAX_NOTE_SIGNATURES) fail(`more than ${MAX_NOTE_SIGNATURES} signature lines`);
    if (!found || !validName(found[1])) fail(`not a signature line: ${JSON.stringify(line.slice(0, 120))}`);
    let bytes;
    try {
      bytes = base64ToBytes(found[2]);
    } catch {
      fail(`the signature of ${found[1]} is not base64`);
    }
    if (bytes.length < 5) fail(`the signature of ${found[1]} is too short`);
    signatures.push({ name: found[1], keyId: bytes.subarray(0, 4), signature: bytes.subarray(4) });
  }
  if (signatures.length === 0) fail('no signature line');
  return { text, signatures };
}

/**
 * The tlog-checkpoint of a note's text: origin, tree size (BigInt), root
 * hash (32 bytes) and any extension lines. Throws TransparencyError('malformed', why).
 */
export function parseCheckpointText(text) {
  const fail = (message) => {
    throw new TransparencyError('malformed', `checkpoint: ${message}`);
  };
  const lines = text.split('\n');
  lines.pop(); // the text ends with a newline
  if (lines.length < 3) fail('fewer than three lines (origin, tree size, root hash)');
  const [origin, sizeText, rootText, ...extensions] = lines;
  if (!validName(origin)) fail('the origin is empty or holds a space');
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText) || BigInt(sizeText) > U64_MAX) fail(`the tree size ${JSON.stringify(sizeText)} is not a decimal u64`);
  let root;
  try {
    root = base64ToBytes(rootText);
  } catch {
    fail('the root hash is not base64');
  }
  if (root.length !== 32) fail(`the root hash is ${root.length} bytes, not 32`);
  if (extensions.some((line) => line === '')) fail('an empty extension line');
  return { origin, size: BigInt(sizeText), root, extensions };
}

/**
 * A C2SP signed note opened with `key` (a parsed verifier key): it must hold
 * a signature line of that key (name and key id; other lines are ignored,
 * as C2SP says) that verifies over the note's text. Returns the text.
 * Throws TransparencyError: 'malformed' or 'note-signature'.
 */
export async function openNote(note, key) {
  const { text, signatures } = parseNote(note);
  const mine = signatures.filter((s) => s.name === key.name && bytesEqual(s.keyId, key.keyId));
  if (mine.length === 0) throw new TransparencyError('note-signature', `the checkpoint has no signature by the log key ${key.text}`);
  for (const s of mine) {
    if (await verifyEd25519(key.publicKey, s.signature, utf8.encode(text))) return text;
  }
  throw new TransparencyError('note-signature', `the checkpoint's signature does not verify with the log key ${key.text}`);
}

/**
 * A signed checkpoint opened with `key`: the note's signature (openNote),
 * then its text as a tlog-checkpoint whose origin is the key's name.
 * Returns { origin, size, root, extensions, note }.
 */
export async function openCheckpoint(note, key) {
  const checkpoint = parseCheckpointText(await openNote(note, key));
  if (checkpoint.origin !== key.name) {
    throw new TransparencyError('note-signature', `the checkpoint's origin ${checkpoint.origin} is not the log key's name ${key.name}`);
  }
  return { ...checkpoint, note };
}

/**
 * §5's signed head: "battlelog/v1/head" || 0x00 || stream id || 0x00 ||
 * u64_le(head version) || h(head version) || u64_le(tree size).
 */
export function headMessage(streamId, version, hash, treeSize) {
  return concatBytes(utf8.encode('battlelog/v1/head'), [0], utf8.encode(streamId), [0], u64le(version), hash, u64le(treeSize));
}

function base64Field(value, field) {
  if (typeof value !== 'string') throw new TransparencyError('malformed', `trailer field ${field} is not a base64 string`);
  let bytes;
  try {
    bytes = base64ToBytes(value);
  } catch {
    throw new TransparencyError('malformed', `trailer field ${field} is not base64`);
  }
  // Padded standard base64 only, as the Rust audit reads it: atob also
  // takes what is unpadded or has spaces, and the two must agree.
  if (bytesToBase64(bytes) !== value) throw new TransparencyError('malformed', `trailer field ${field} is not padded standard base64`);
  return bytes;
}

/** A trailer's fields read and typed, or TransparencyError('malformed', naming the field). */
function readTrailer(trailer) {
  const bad = (field, what) => {
    throw new TransparencyError('malformed', `trailer field ${field} ${what}`);
  };
  if (trailer === null || typeof trailer !== 'object') bad('(the line)', 'is not an object');
  if (typeof trailer.checkpoint !== 'string') bad('checkpoint', 'is not a string');
  if (typeof trailer.log_key !== 'string') bad('log_key', 'is not a string');
  const head = trailer.head;
  if (head === null || typeof head !== 'object') bad('head', 'is not an object');
  if (typeof head.stream !== 'string') bad('head.stream', 'is not a string');
  const version = toU64(head.version);
  if (version === null) bad('head.version', 'is not an unsigned integer');
  if (typeof head.hash !== 'string' || !/^[0-9a-f]{64}$/.test(head.hash)) bad('head.hash', 'is not 64 lowercase hex digits');
  const headSignature = base64Field(trailer.head_signature, 'head_signature');
  if (headSignature.length !== 64) bad('head_signature', `is ${headSignature.length} bytes, not 64`);
  const leafIndex = toU64(trailer.leaf_index);
  if (leafIndex === null) bad('leaf_index', 'is not an unsigned integer');
  if (!Array.isArray(trailer.inclusion_proof)) bad('inclusion_proof', 'is not a list');
  if (trailer.inclusion_proof.length > 64) bad('inclusion_proof', `holds ${trailer.inclusion_proof.length} hashes, more than a 64-bit tree's 64`);
  const proof = trailer.inclusion_proof.map((p, i) => {
    const bytes = base64Field(p, `inclusion_proof[${i}]`);
    if (bytes.length !== 32) bad(`inclusion_proof[${i}]`, `is ${bytes.length} bytes, not 32`);
    return bytes;
  });
  return { head: { stream: head.stream, version, hash: hexToBytes(head.hash.toLowerCase()) }, headSignature, leafIndex, proof };
}

/**
 * Checks an export's trailer (docs/protocol.md §5) against its last event
 * `last` ({ stream, version, hash: hex }) and the log keys the verifier
 * trusts (`trusted`: verifier key texts; none given: the key is not pinned).
 *
 * Returns { check: 'ok' | 'bad', failures: [{ what, message }], logKey,
 * keyStatus: 'pinned' | 'unpinned' | 'mismatch', checkpoint: null | {
 * origin, size (decimal string), root (base64), note } }. `what` is one of
 * 'malformed', 'log-key-not-trusted', 'note-signature',
 * 'head-not-last-event', 'head-signature', 'inclusion-proof'. Every check
 * that can run does, so each failure is named, not only the first.
 */
export async function checkTrailer(trailer, last, trusted = []) {
  const failures = [];
  const failed = (error) => {
    if (error instanceof TransparencyError) failures.push({ what: error.what, message: error.message });
    else throw error;
  };
  const result = (keyStatus, logKey, checkpoint) => ({
    check: failures.length === 0 ? 'ok' : 'bad', failures, logKey, keyStatus, checkpoint,
  });
  let fields;
  let key;
  try {
    fields = readTrailer(trailer);
    key = parseVerifierKey(trailer.log_key);
  } catch (error) {
    failed(error);
    return result('unpinned', typeof trailer?.log_key === 'string' ? trailer.log_key : null, null);
  }
  // Pinned: the key is one the verifier trusts (compared as parsed keys,
  // so that spacing around a published key does not matter).
  const trustedKeys = [];
  for (const text of trusted) {
    try {
      trustedKeys.push(parseVerifierKey(text));
    } catch {
      // A trusted key that does not parse trusts nothing: the trailer's key
      // cannot match it, so a typo fails rather than passes.
    }
  }
  let keyStatus = 'unpinned';
  if (trusted.length > 0) {
    const match = trustedKeys.some((k) => k.name === key.name && bytesEqual(k.publicKey, key.publicKey));
    keyStatus = match ? 'pinned' : 'mismatch';
    if (!match) failed(new TransparencyError('log-key-not-trusted', `the trailer's log key ${key.text} is not the log key trusted here (${trusted.join(', ')})`));
  }
  let checkpoint = null;
  try {
    checkpoint = await openCheckpoint(trailer.checkpoint, key);
  } catch (error) {
    failed(error);
  }
  // The head must be the export's last event: an export cut short at the
  // end fails here (its trailer names a later version or another hash).
  const headProblems = [];
  if (fields.head.stream !== last.stream) headProblems.push(`the head names stream ${JSON.stringify(fields.head.stream)}, the export ${JSON.stringify(last.stream)}`);
  if (fields.head.version !== BigInt(last.version)) headProblems.push(`the head is version ${fields.head.version}, the export ends at version ${last.version}`);
  if (bytesToHex(fields.head.hash) !== String(last.hash).toLowerCase()) headProblems.push(`the head's hash ${bytesToHex(fields.head.hash)} is not the last event's ${last.hash}`);
  if (headProblems.length > 0) failed(new TransparencyError('head-not-last-event', `the trailer's head is not the export's last event: ${headProblems.join('; ')}`));
  if (checkpoint) {
    // The head's signature and its record's inclusion are both stated at
    // the checkpoint's tree size: without a checkpoint they prove nothing.
    const message = headMessage(fields.head.stream, fields.head.version, fields.head.hash, checkpoint.size);
    if (!(await verifyEd25519(key.publicKey, fields.headSignature, message))) {
      failed(new TransparencyError('head-signature', `the head signature does not verify with the log key at tree size ${checkpoint.size}`));
    }
    try {
      verifyInclusion(fields.leafIndex, checkpoint.size, leafHash(fields.head.stream, fields.head.version, fields.head.hash), fields.proof, checkpoint.root);
    } catch (error) {
      failed(error);
    }
  }
  const shown = checkpoint && { origin: checkpoint.origin, size: checkpoint.size.toString(), root: bytesToBase64(checkpoint.root), rootHex: bytesToHex(checkpoint.root), note: checkpoint.note };
  return result(keyStatus, key.text, shown);
}
