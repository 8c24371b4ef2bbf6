// The hash chain of an export (docs/protocol.md §4). A link's SHA-256 is the
// vendored @noble/hashes one, synchronous: an export is thousands of short
// hashes, and a WebCrypto call per link costs more in waiting for its
// promise (in a worker above all) than in hashing.
import { concatBytes, utf8 } from './bytes.js';
import { sha256 } from './hash.js';
import { sha256 as sha256Sync } from './vendor/noble-hashes/sha2.js';

/** §4: h(−1) = SHA-256("battlelog/v1/stream" || 0x00 || stream_id). */
export async function genesisHash(streamId) {
  return sha256(concatBytes(utf8.encode('battlelog/v1/stream'), [0], utf8.encode(streamId)));
}

/** §4: h(v) = SHA-256(h(v−1) || record_v). Synchronous (callers may still await it). */
export function chainHash(previous, record) {
  return sha256Sync(concatBytes(previous, record));
}
