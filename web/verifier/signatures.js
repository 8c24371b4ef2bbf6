// The roller's Ed25519 signatures (docs/PROTOCOL-signatures.md).
import { concatBytes, hexToBytes, utf8 } from './bytes.js';
import { subtle } from './hash.js';
import * as ed from './vendor/noble-ed25519/index.js';

/**
 * docs/PROTOCOL-signatures.md §2: the bytes the roller signs for a
 * commitment — "battlelog/v1/commitment" || 0x00 || battle_id || 0x00 ||
 * u32_be(epoch) || the commitment's 64 hex digits as ASCII.
 */
export function commitmentMessage(battleId, epoch, commitment) {
  const e = new Uint8Array(4);
  new DataView(e.buffer).setUint32(0, epoch, false);
  return concatBytes(utf8.encode('battlelog/v1/commitment'), [0], utf8.encode(battleId), [0], e, utf8.encode(commitment));
}

let ed25519Support = null;

/** Whether this browser's or Node's WebCrypto has Ed25519 (not every browser does yet). */
export async function hasEd25519() {
  if (ed25519Support === null) {
    try {
      // Any valid public key serves as the probe: the addendum's example key.
      await subtle().importKey('raw', hexToBytes('7fdf536f36f082a2b3aed8dfe24c88e4386b05c3be0d29a15c2c5f50ee2d4ef0'), { name: 'Ed25519' }, false, ['verify']);
      ed25519Support = true;
    } catch {
      ed25519Support = false;
    }
  }
  return ed25519Support;
}

/**
 * Verifies an Ed25519 signature (RFC 8032) in JavaScript with the vendored
 * @noble/ed25519 (SHA-512 from WebCrypto, which every browser has). Strict
 * RFC 8032 decoding (`zip215: false`): a non-canonical key or R is refused.
 */
export async function verifyEd25519Js(publicKey, signature, message) {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  try {
    return await ed.verifyAsync(signature, message, publicKey, { zip215: false });
  } catch {
    return false; // not a point of the curve, a scalar out of range
  }
}

/**
 * Verifies an Ed25519 signature (RFC 8032): with WebCrypto where this
 * browser or Node has Ed25519, otherwise in JavaScript (verifyEd25519Js).
 * Always true or false: a signature is never taken as checked unchecked.
 * A WebCrypto that throws (Ed25519 missing or withdrawn) hands over to the
 * JavaScript check rather than failing a good signature.
 */
export async function verifyEd25519(publicKey, signature, message) {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  if (await hasEd25519()) {
    try {
      const key = await subtle().importKey('raw', publicKey, { name: 'Ed25519' }, false, ['verify']);
      const valid = await subtle().verify({ name: 'Ed25519' }, key, signature, message);
      if (typeof valid === 'boolean') return valid;
    } catch {
      // A key WebCrypto refuses, or no Ed25519 after all: the JS check decides.
    }
  }
  return verifyEd25519Js(publicKey, signature, message);
}
