// The hash chain of an export (PROTOCOL.md §4).
import { concatBytes, utf8 } from './bytes.js';
import { sha256 } from './hash.js';

/** §4: h(−1) = SHA-256("battlelog/v1/stream" || 0x00 || stream_id). */
export async function genesisHash(streamId) {
  return sha256(concatBytes(utf8.encode('battlelog/v1/stream'), [0], utf8.encode(streamId)));
}

/** §4: h(v) = SHA-256(h(v−1) || record_v). */
export async function chainHash(previous, record) {
  return sha256(concatBytes(previous, record));
}
