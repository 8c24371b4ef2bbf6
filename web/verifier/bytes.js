// Bytes: hex, base64, UTF-8 and the small helpers every other module uses.
// No dependencies.

export const utf8 = new TextEncoder();
export const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

export function hexToBytes(hex) {
  if (typeof hex !== 'string' || hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new TypeError('not an even-length hex string');
  }
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function bytesToHex(bytes) {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

// atob/btoa exist in browsers and in Node ≥ 16; they work on "binary
// strings", one char per byte. Strict: atob refuses characters outside the
// alphabet, which is what an auditor wants from a tampered line.
export function base64ToBytes(text) {
  // Native where the platform has it (Chromium 140+): the same strict
  // alphabet, a record at a time without a binary string in between.
  if (typeof Uint8Array.fromBase64 === 'function') {
    try {
      return Uint8Array.fromBase64(text);
    } catch {
      throw new DOMException('The string to be decoded is not correctly encoded.', 'InvalidCharacterError');
    }
  }
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

export function bytesToBase64(bytes) {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

export function concatBytes(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function bytesEqual(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function seedBytes(seed) {
  const bytes = typeof seed === 'string' ? hexToBytes(seed) : seed;
  if (!(bytes instanceof Uint8Array) || bytes.length !== 32) {
    throw new TypeError('a server seed is 32 bytes (64 hex digits)');
  }
  return bytes;
}
