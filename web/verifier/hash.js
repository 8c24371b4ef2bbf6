// Hashes of the protocol (docs/protocol.md §1, §2): SHA-256 and HMAC-SHA256 from
// WebCrypto, the same in browsers and Node; the commitment and the roll key.
import { bytesToHex, concatBytes, hexToBytes, seedBytes, utf8 } from './bytes.js';

export function subtle() {
  const s = globalThis.crypto && globalThis.crypto.subtle;
  // A page opened over plain http:// (not localhost) has no SubtleCrypto;
  // say so instead of failing with a TypeError deep inside.
  if (!s) throw new Error('WebCrypto (crypto.subtle) is not available here: open the page over https or from a file');
  return s;
}

export async function sha256(bytes) {
  return new Uint8Array(await subtle().digest('SHA-256', bytes));
}

export async function hmacSha256(key, message) {
  const k = await subtle().importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await subtle().sign('HMAC', k, message));
}

/** §1: lowercase hex of SHA-256(server_seed). */
export async function commitmentOf(serverSeed) {
  return bytesToHex(await sha256(seedBytes(serverSeed)));
}

/** §2: HMAC-SHA256(key = server_seed, "battlelog/v1/roll" || 0x00 || client_seed). */
export async function rollKeyOf(serverSeed, clientSeed) {
  const message = concatBytes(utf8.encode('battlelog/v1/roll'), [0], utf8.encode(clientSeed));
  return hmacSha256(seedBytes(serverSeed), message);
}

/**
 * §6.3 step 4 (protocol v2): HMAC-SHA256(key = server_seed,
 * "battlelog/v2/roll" || 0x00 || client_seed || 0x00 || u64_be(round) ||
 * randomness), randomness being the beacon round's ρ = SHA-256(σ). One key
 * per roll (its round's); the words are still ChaCha20 at the roll's nonce.
 */
export async function rollKeyOfV2(serverSeed, clientSeed, round, randomness) {
  const r = new Uint8Array(8);
  new DataView(r.buffer).setBigUint64(0, BigInt(round), false);
  const rho = typeof randomness === 'string' ? hexToBytes(randomness) : randomness;
  const message = concatBytes(utf8.encode('battlelog/v2/roll'), [0], utf8.encode(clientSeed), [0], r, rho);
  return hmacSha256(seedBytes(serverSeed), message);
}

/** §1, the recommended (not required) way a roller makes its seeds. */
export async function deriveServerSeed(masterKey, battleId, epoch) {
  const e = new Uint8Array(4);
  new DataView(e.buffer).setUint32(0, epoch, false);
  const message = concatBytes(utf8.encode('battlelog/v1/seed'), [0], utf8.encode(battleId), [0], e);
  return hmacSha256(typeof masterKey === 'string' ? hexToBytes(masterKey) : masterKey, message);
}
