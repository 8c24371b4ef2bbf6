// battlelog verifier: a second, independent implementation of the
// verification protocol v1 (PROTOCOL.md §1–§4), written from the protocol
// text rather than from the Rust code, so that a bug in one implementation
// shows up as a disagreement with the other.
//
// One ES module with no dependencies: it runs unchanged in a browser (the
// battle page and /verify) and under Node 20. SHA-256 and HMAC-SHA256 come
// from WebCrypto (`globalThis.crypto.subtle`); ChaCha20 is implemented here;
// 64-bit arithmetic uses BigInt.
//
// API (every function that hashes is async, because WebCrypto is):
//
//   parseExpression(source)                 -> Expression (throws DiceExpressionError)
//   evaluateExpression(expression, nextWord) -> { dice, total, totalExact, error }
//       dice:  [{ sides, value, kept, rerolled, exploded }] in draw order
//       total: Number (0 when error is set); totalExact: the same as a BigInt
//       error: null | DiceExpressionError (division by zero, overflow): the
//              dice drawn before it still stand, as the roller journals
//              them (battle.proto, DiceRolled.error)
//   deriveRoll(serverSeed, clientSeed, nonce, expression)
//       -> { commitment, rollKey, firstWords, dice, total, error }
//       serverSeed: hex string or Uint8Array (32 bytes); clientSeed: string;
//       nonce: Number or BigInt; hex strings out. Throws
//       DiceExpressionError when the expression does not parse.
//   verifyRoll(vector)  -> { ok, mismatches: [String] }
//       vector: one entry of vectors/rolls.json (server_seed, client_seed,
//       nonce, notation, commitment, roll_key, first_words, total, dice)
//   verifyExport(text, { head, stream, rollerKey }) -> ExportReport
//       text: a `battlelog export` (JSON Lines); head: optional hex hash the
//       forum posted (a cut-short export then fails); stream: optional battle
//       id the caller expects; rollerKey: optional hex of the roller key the
//       operator publishes (every commitment must then be signed by it).
//       Throws ExportFormatError when the text is not an export at all (not
//       JSON Lines, a required field missing).
//   ExportReport = {
//     status: 'verified' | 'failed' | 'unrevealed',   // the page's data-audit
//     firstFailure: Number | null,                    // version; #first-failure
//         the earliest version where the export departs from a consistent
//         journal (for a missing event, the missing version; for a head
//         given but absent, the version after the last). Rolls of an epoch
//         whose revealed seed fails its commitment are marked bad too, even
//         when they come before that reveal: the reveal is the failure.
//     stream, headHash, events: [EventResult], rolls: [RollResult],
//     commitments: [CommitmentResult], problems: [{ version, check, message }],
//     head: null | { given, check: 'ok' | 'bad', message },
//     trailer: null | { head: 'ok' | 'bad', signatures: 'not checked' }
//   }
//   EventResult = { version, line, type, hash, link, record, event,   // 'ok' | 'bad'
//                   check: 'ok' | 'bad' | 'unrevealed', problems, decoded }
//   RollResult = { version, nonce, epoch, expression,
//                  check: 'ok' | 'bad' | 'unrevealed', problems, recorded, derived }
//   CommitmentResult = { epoch, commitment, version, revealedAt,
//                        check: 'ok' | 'bad' | 'unrevealed',       // seed vs commitment
//                        signature: 'ok' | 'bad' | 'unsigned' | 'not checked' }
//   report.rollerKey: hex of the key that signed the battle's first signed
//   commitment (null: none), to compare with the one the operator publishes.
//
// Lower-level helpers are exported too, for tests and tools: chacha20Block,
// RollWords, dieFace, sha256, hmacSha256, commitmentOf, rollKeyOf,
// deriveServerSeed, genesisHash, chainHash, protobufFields, decodeRecord,
// hexToBytes, bytesToHex, base64ToBytes, bytesToBase64.
//
// It also checks the roller's Ed25519 signature on every commitment
// (docs/PROTOCOL-signatures.md) with WebCrypto's Ed25519 where the browser
// has it (Node 20 does; a browser without it gets 'not checked', not a
// failure). WebCrypto verifies as RFC 8032 says; unlike ed25519-dalek's
// verify_strict it may accept a small-order key or R, which the roller never
// makes.
//
// What it does not check: re-resolving actions under RULES.md (the Rust
// audit does that), and the signed checkpoints of PROTOCOL.md §5 (a
// trailer's head is compared with the last event; its signatures are
// reported as not checked).

export const PROTOCOL = 'battlelog/v1';

// ---------------------------------------------------------------------------
// Bytes
// ---------------------------------------------------------------------------

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

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

function concatBytes(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function bytesEqual(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function seedBytes(seed) {
  const bytes = typeof seed === 'string' ? hexToBytes(seed) : seed;
  if (!(bytes instanceof Uint8Array) || bytes.length !== 32) {
    throw new TypeError('a server seed is 32 bytes (64 hex digits)');
  }
  return bytes;
}

// ---------------------------------------------------------------------------
// Hashes (PROTOCOL.md §1, §2, §4) — WebCrypto, the same in browsers and Node
// ---------------------------------------------------------------------------

function subtle() {
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

/** §1, the recommended (not required) way a roller makes its seeds. */
export async function deriveServerSeed(masterKey, battleId, epoch) {
  const e = new Uint8Array(4);
  new DataView(e.buffer).setUint32(0, epoch, false);
  const message = concatBytes(utf8.encode('battlelog/v1/seed'), [0], utf8.encode(battleId), [0], e);
  return hmacSha256(typeof masterKey === 'string' ? hexToBytes(masterKey) : masterKey, message);
}

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
 * Verifies an Ed25519 signature (RFC 8032) with WebCrypto. Returns true or
 * false, or null when this environment has no Ed25519. A key that is not a
 * point of the curve is false.
 */
export async function verifyEd25519(publicKey, signature, message) {
  if (!(await hasEd25519())) return null;
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  try {
    const key = await subtle().importKey('raw', publicKey, { name: 'Ed25519' }, false, ['verify']);
    return await subtle().verify({ name: 'Ed25519' }, key, signature, message);
  } catch {
    return false;
  }
}

/** §4: h(−1) = SHA-256("battlelog/v1/stream" || 0x00 || stream_id). */
export async function genesisHash(streamId) {
  return sha256(concatBytes(utf8.encode('battlelog/v1/stream'), [0], utf8.encode(streamId)));
}

/** §4: h(v) = SHA-256(h(v−1) || record_v). */
export async function chainHash(previous, record) {
  return sha256(concatBytes(previous, record));
}

// ---------------------------------------------------------------------------
// ChaCha20 (PROTOCOL.md §2: 20 rounds, the original layout — 64-bit block
// counter in words 12–13, 64-bit nonce in words 14–15)
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Dice expressions v1 (PROTOCOL.md §3)
// ---------------------------------------------------------------------------

export const LIMITS = Object.freeze({
  expressionBytes: 1000,
  count: 1000,
  sides: 1000000,
  dicePerRoll: 10000,
  explosionsPerTerm: 100,
  nesting: 32,
});

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

/**
 * Why an expression was refused (`kind` names the rule; `position` is the
 * 1-based character column, so a forum user can count it on what they typed).
 */
export class DiceExpressionError extends Error {
  constructor(kind, message, position = null) {
    super(position === null ? message : `${message} at ${position}`);
    this.name = 'DiceExpressionError';
    this.kind = kind;
    this.position = position;
  }
}

const DICE_LETTERS = new Set(['d', 'D', 'д', 'Д']);
const isDigit = (c) => c !== undefined && c >= '0' && c <= '9';
// Characters a user cannot see (C0, DEL, C1): refused by name rather than
// reported as a confusing token, and kept out of comments that are pasted
// into forum posts and terminals.
const isControl = (c) => {
  const p = c.codePointAt(0);
  return p < 0x20 || (p >= 0x7f && p < 0xa0);
};
const describeChar = (c) =>
  c === undefined ? 'the end' : isControl(c) ? `control character U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}` : `'${c}'`;

function meets(cmp, threshold, value) {
  switch (cmp) {
    case '>=': return value >= threshold;
    case '<=': return value <= threshold;
    case '>': return value > threshold;
    case '<': return value < threshold;
    default: return value === threshold;
  }
}

class ExpressionParser {
  constructor(source) {
    // Code points, not UTF-16 units: 'д' is one column.
    this.chars = Array.from(source);
    this.pos = 0;
    this.depth = 0;
  }

  peek(offset = 0) {
    return this.chars[this.pos + offset];
  }

  column() {
    return this.pos + 1;
  }

  fail(message) {
    return new DiceExpressionError('syntax', message, this.column());
  }

  // Spaces and tabs separate tokens; a dice term is one token, so
  // `2 d6` is refused rather than read two ways.
  skipSpace() {
    for (;;) {
      const c = this.peek();
      if (c === ' ' || c === '\t') this.pos++;
      else if (c !== undefined && isControl(c)) throw this.fail(`unexpected ${describeChar(c)}`);
      else return;
    }
  }

  deeper(at) {
    this.depth++;
    if (this.depth > LIMITS.nesting) {
      throw new DiceExpressionError('too_deep', `nesting deeper than ${LIMITS.nesting} levels`, at);
    }
  }

  // roll := expr [ '#' comment ]
  roll() {
    const root = this.expr();
    this.skipSpace();
    let comment = null;
    const c = this.peek();
    if (c === '#') {
      const rest = this.chars.slice(this.pos + 1);
      const bad = rest.findIndex(isControl);
      if (bad >= 0) {
        this.pos += 1 + bad;
        throw this.fail(`the comment holds ${describeChar(rest[bad])}`);
      }
      comment = rest.join('').trim();
    } else if (c === ')') {
      throw this.fail("unmatched ')'");
    } else if (c !== undefined) {
      throw this.fail(`unexpected ${describeChar(c)}`);
    }
    return { root, comment };
  }

  // expr := term { ('+' | '-') term }
  expr() {
    let node = this.term();
    for (;;) {
      this.skipSpace();
      const op = this.peek();
      if (op !== '+' && op !== '-') return node;
      const at = this.column();
      this.pos++;
      node = { kind: 'binary', op, left: node, right: this.term(), at };
    }
  }

  // term := unary { ('*' | '/') unary }
  term() {
    let node = this.unary();
    for (;;) {
      this.skipSpace();
      const op = this.peek();
      if (op !== '*' && op !== '/') return node;
      const at = this.column();
      this.pos++;
      node = { kind: 'binary', op, left: node, right: this.unary(), at };
    }
  }

  // unary := '-' unary | atom — each '-' is a level of nesting, so that a
  // thousand minus signs cannot exhaust the evaluator's stack.
  unary() {
    this.skipSpace();
    if (this.peek() === '-') {
      const at = this.column();
      this.pos++;
      this.deeper(at);
      const operand = this.unary();
      this.depth--;
      return { kind: 'negate', operand, at };
    }
    return this.atom();
  }

  // atom := INT | dice | '(' expr ')'
  atom() {
    const c = this.peek();
    if (c === '(') {
      const open = this.column();
      this.pos++;
      this.deeper(open);
      const inner = this.expr();
      this.skipSpace();
      if (this.peek() !== ')') {
        throw this.fail(`expected ')' to close the '(' at ${open}, found ${describeChar(this.peek())}`);
      }
      this.pos++;
      this.depth--;
      return inner;
    }
    if (isDigit(c)) {
      const start = this.pos;
      const digits = this.digits();
      if (DICE_LETTERS.has(this.peek())) {
        return this.dice(start, this.bounded(digits, start, 'dice count', 1, LIMITS.count));
      }
      const value = BigInt(digits);
      if (value > I64_MAX) {
        throw new DiceExpressionError('out_of_range', `number ${digits} is outside the signed 64-bit range`, start + 1);
      }
      return { kind: 'number', value };
    }
    if (DICE_LETTERS.has(c)) return this.dice(this.pos, 1);
    throw this.fail(`expected a number, a dice term or '(', found ${describeChar(c)}`);
  }

  digits() {
    const start = this.pos;
    while (isDigit(this.peek())) this.pos++;
    return this.chars.slice(start, this.pos).join('');
  }

  bounded(digits, start, what, min, max) {
    // Compare as BigInt: a 30-digit count must be refused, not rounded.
    const n = BigInt(digits);
    if (n < BigInt(min) || n > BigInt(max)) {
      throw new DiceExpressionError('out_of_range', `${what} ${digits} is outside the allowed ${min}..=${max}`, start + 1);
    }
    return Number(n);
  }

  cmp() {
    const a = this.peek();
    const b = this.peek(1);
    if ((a === '>' || a === '<') && b === '=') {
      this.pos += 2;
      return a + '=';
    }
    if (a === '>' || a === '<' || a === '=') {
      this.pos++;
      return a;
    }
    return null;
  }

  conditionValue(cmp) {
    if (!isDigit(this.peek())) throw this.fail(`expected a number after '${cmp}'`);
    const start = this.pos;
    // No face passes a million, so a larger threshold can only be a typo.
    return this.bounded(this.digits(), start, 'comparison value', 0, LIMITS.sides);
  }

  // dice := [COUNT] D SIDES { modifier } [ cmp INT ]; `pos` is at the letter.
  dice(start, count) {
    const letter = this.peek();
    this.pos++;
    let faces;
    let fudge = false;
    const s = this.peek();
    if (s === '%') {
      this.pos++;
      faces = 100;
    } else if (s === 'F') {
      this.pos++;
      faces = 3;
      fudge = true;
    } else if (isDigit(s)) {
      const at = this.pos;
      faces = this.bounded(this.digits(), at, 'die sides', 1, LIMITS.sides);
    } else {
      throw this.fail(`expected a number, '%' or 'F' after '${letter}'`);
    }
    const term = { kind: 'dice', count, faces, fudge, explode: null, reroll: null, keep: null, success: null };
    const lowest = fudge ? -1 : 1;
    const highest = fudge ? 1 : faces;
    for (;;) {
      const at = this.column();
      const c = this.peek();
      const next = this.peek(1);
      if (c === '!') {
        this.pos++;
        if (term.explode) throw new DiceExpressionError('repeated_modifier', "a dice term takes one explode ('!') modifier; another one is", at);
        const cmp = this.cmp();
        const explode = cmp ? { cmp, value: this.conditionValue(cmp) } : { cmp: '=', value: highest };
        // Conditions are a threshold or a single value, so the two extreme
        // faces (and, for '=', a one-faced die) decide whether every face meets it.
        const everyFace =
          meets(explode.cmp, explode.value, lowest) &&
          meets(explode.cmp, explode.value, highest) &&
          (explode.cmp !== '=' || lowest === highest);
        if (everyFace) {
          throw new DiceExpressionError('endless_explosion', `the explosion condition is met by every face of a d${fudge ? 'F' : faces}, so it would never stop`, at);
        }
        term.explode = explode;
      } else if (c === 'r') {
        this.pos++;
        if (term.reroll) throw new DiceExpressionError('repeated_modifier', "a dice term takes one reroll ('r') modifier; another one is", at);
        const cmp = this.cmp() || '=';
        term.reroll = { cmp, value: this.conditionValue(cmp) };
      } else if ((c === 'k' || c === 'd') && (next === 'h' || next === 'l')) {
        this.pos += 2;
        if (term.keep) throw new DiceExpressionError('repeated_modifier', 'a dice term takes one keep/drop modifier; another one is', at);
        let n = 1;
        if (isDigit(this.peek())) {
          const digitsAt = this.pos;
          n = this.bounded(this.digits(), digitsAt, 'keep/drop count', 0, LIMITS.count);
        }
        term.keep = { keep: c === 'k', highest: next === 'h', n };
      } else if (c === '>' || c === '<' || c === '=') {
        const cmp = this.cmp();
        term.success = { cmp, value: this.conditionValue(cmp) };
        break; // the trailing comparison ends the term
      } else {
        break;
      }
    }
    term.text = this.chars.slice(start, this.pos).join('');
    return term;
  }
}

function collectDiceTerms(node, out) {
  if (node.kind === 'dice') out.push(node);
  else if (node.kind === 'negate') collectDiceTerms(node.operand, out);
  else if (node.kind === 'binary') {
    collectDiceTerms(node.left, out);
    collectDiceTerms(node.right, out);
  }
  return out;
}

/**
 * Parses a dice expression and checks every limit of §3 that does not depend
 * on the dice. The per-roll dice limit is checked on the worst case (every
 * die rerolled, every explosion budget spent) so that it holds for any seed:
 * a roll must never be refused after its dice are drawn.
 */
export function parseExpression(source) {
  if (typeof source !== 'string') throw new TypeError('an expression is a string');
  const bytes = utf8.encode(source).length;
  if (bytes > LIMITS.expressionBytes) {
    throw new DiceExpressionError('too_long', `expression is ${bytes} bytes long; the limit is ${LIMITS.expressionBytes} bytes`);
  }
  const parser = new ExpressionParser(source);
  const { root, comment } = parser.roll();
  const terms = collectDiceTerms(root, []);
  const worstCase = terms.reduce(
    (n, t) => n + t.count * (t.reroll ? 2 : 1) + (t.explode ? LIMITS.explosionsPerTerm : 0),
    0,
  );
  if (worstCase > LIMITS.dicePerRoll) {
    throw new DiceExpressionError(
      'too_many_dice',
      `the expression may draw up to ${worstCase} dice (rerolls and explosions included); the limit is ${LIMITS.dicePerRoll} dice per roll`,
    );
  }
  return { source, root, comment, terms };
}

function rollTerm(term, nextWord, dice) {
  const draw = () => {
    const face = dieFace(nextWord, term.faces);
    return term.fudge ? face - 2 : face;
  };
  const die = (value, rerolled, exploded) => ({ sides: term.faces, value, kept: !rerolled, rerolled, exploded });
  const first = dice.length;
  let explosionsLeft = LIMITS.explosionsPerTerm;
  for (let i = 0; i < term.count; i++) {
    let value = draw();
    if (term.reroll && meets(term.reroll.cmp, term.reroll.value, value)) {
      // Rerolled once: the replacement is drawn right away and stands.
      dice.push(die(value, true, false));
      value = draw();
    }
    dice.push(die(value, false, false));
    while (explosionsLeft > 0 && term.explode && meets(term.explode.cmp, term.explode.value, value)) {
      explosionsLeft--;
      value = draw();
      dice.push(die(value, false, true));
    }
  }
  const drawn = dice.slice(first);
  if (term.keep) {
    const candidates = drawn.filter((d) => !d.rerolled);
    // Array.prototype.sort is stable (ES2019): among equal values the
    // earlier-drawn die stays first, so it is kept first by kh/kl and
    // dropped first by dh/dl, as §3 step 3 wants.
    candidates.sort((a, b) => (term.keep.highest ? b.value - a.value : a.value - b.value));
    const n = Math.min(term.keep.n, candidates.length);
    const dropped = term.keep.keep ? candidates.slice(n) : candidates.slice(0, n);
    for (const d of dropped) d.kept = false;
  }
  const kept = drawn.filter((d) => d.kept);
  if (term.success) return BigInt(kept.filter((d) => meets(term.success.cmp, term.success.value, d.value)).length);
  return kept.reduce((sum, d) => sum + BigInt(d.value), 0n);
}

function checked(value, at) {
  if (value < I64_MIN || value > I64_MAX) {
    throw new DiceExpressionError('overflow', 'arithmetic overflow: the result leaves the signed 64-bit range', at);
  }
  return value;
}

function evaluateNode(node, nextWord, dice) {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'dice':
      return rollTerm(node, nextWord, dice);
    case 'negate':
      return checked(-evaluateNode(node.operand, nextWord, dice), node.at);
    default: {
      // Depth first, left to right: the whole left operand draws first.
      const left = evaluateNode(node.left, nextWord, dice);
      const right = evaluateNode(node.right, nextWord, dice);
      switch (node.op) {
        case '+': return checked(left + right, node.at);
        case '-': return checked(left - right, node.at);
        case '*': return checked(left * right, node.at);
        default:
          if (right === 0n) throw new DiceExpressionError('division_by_zero', 'division by zero', node.at);
          // BigInt division truncates toward zero, as §3 asks.
          return checked(left / right, node.at);
      }
    }
  }
}

/**
 * Evaluates a parsed expression drawing from `nextWord` (a function returning
 * the next u32). An arithmetic error stops the evaluation; the dice drawn
 * until then are returned with it, since the roller journals them.
 */
export function evaluateExpression(expression, nextWord) {
  const dice = [];
  try {
    const total = evaluateNode(expression.root, nextWord, dice);
    return { dice, total: Number(total), totalExact: total, error: null };
  } catch (error) {
    if (!(error instanceof DiceExpressionError)) throw error;
    return { dice, total: 0, totalExact: 0n, error };
  }
}

/** §2–§3: re-derives one roll from the revealed seed. */
export async function deriveRoll(serverSeed, clientSeed, nonce, expression) {
  const parsed = typeof expression === 'string' ? parseExpression(expression) : expression;
  const seed = seedBytes(serverSeed);
  const rollKey = await rollKeyOf(seed, clientSeed);
  const preview = new RollWords(rollKey, nonce);
  const firstWords = [preview.next(), preview.next(), preview.next(), preview.next()];
  const words = new RollWords(rollKey, nonce);
  const result = evaluateExpression(parsed, () => words.next());
  return {
    commitment: await commitmentOf(seed),
    rollKey: bytesToHex(rollKey),
    firstWords,
    dice: result.dice,
    total: result.total,
    error: result.error,
  };
}

const DIE_FIELDS = ['sides', 'value', 'kept', 'rerolled', 'exploded'];

function compareDice(expected, actual) {
  const mismatches = [];
  if (!Array.isArray(actual)) return ['dice: not a list'];
  if (expected.length !== actual.length) mismatches.push(`dice: ${actual.length} recorded, ${expected.length} re-derived`);
  for (let i = 0; i < Math.min(expected.length, actual.length); i++) {
    for (const f of DIE_FIELDS) {
      if (expected[i][f] !== actual[i][f]) {
        mismatches.push(`die ${i + 1}: ${f} ${JSON.stringify(actual[i][f])} recorded, ${JSON.stringify(expected[i][f])} re-derived`);
      }
    }
  }
  return mismatches;
}

/** Checks one known-answer vector (vectors/rolls.json) field by field. */
export async function verifyRoll(vector) {
  const derived = await deriveRoll(vector.server_seed, vector.client_seed, vector.nonce, vector.notation);
  const mismatches = [];
  if (derived.commitment !== vector.commitment) mismatches.push(`commitment ${derived.commitment}, vector ${vector.commitment}`);
  if (derived.rollKey !== vector.roll_key) mismatches.push(`roll key ${derived.rollKey}, vector ${vector.roll_key}`);
  const words = vector.first_words || [];
  words.forEach((w, i) => {
    if (derived.firstWords[i] !== w) mismatches.push(`word ${i}: ${derived.firstWords[i]}, vector ${w}`);
  });
  if (derived.error) mismatches.push(`evaluation failed: ${derived.error.message}`);
  if (derived.total !== vector.total) mismatches.push(`total ${derived.total}, vector ${vector.total}`);
  mismatches.push(...compareDice(derived.dice, vector.dice));
  return { ok: mismatches.length === 0, mismatches, derived };
}

// ---------------------------------------------------------------------------
// Protobuf records (proto/battlelog/v1/journal.proto, battle.proto): only the
// wire format, read by hand, so that no generated code is trusted
// ---------------------------------------------------------------------------

export class RecordDecodeError extends Error {
  constructor(message) {
    super(message);
    this.name = 'RecordDecodeError';
  }
}

function readVarint(bytes, at) {
  let value = 0n;
  let shift = 0n;
  for (let i = 0; i < 10; i++) {
    if (at >= bytes.length) throw new RecordDecodeError('truncated varint');
    const b = bytes[at++];
    value |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [BigInt.asUintN(64, value), at];
    shift += 7n;
  }
  throw new RecordDecodeError('varint longer than 10 bytes');
}

/**
 * The fields of one protobuf message in wire order: { number, wireType,
 * value, start, end } — value is a BigInt (varint, fixed) or a Uint8Array
 * (length-delimited); start/end frame the whole field in `bytes`.
 */
export function protobufFields(bytes) {
  const fields = [];
  let at = 0;
  while (at < bytes.length) {
    const start = at;
    let key;
    [key, at] = readVarint(bytes, at);
    const number = Number(key >> 3n);
    const wireType = Number(key & 7n);
    if (number === 0) throw new RecordDecodeError('field number 0');
    let value;
    if (wireType === 0) {
      [value, at] = readVarint(bytes, at);
    } else if (wireType === 1 || wireType === 5) {
      const n = wireType === 1 ? 8 : 4;
      if (at + n > bytes.length) throw new RecordDecodeError('truncated fixed-width field');
      const view = new DataView(bytes.buffer, bytes.byteOffset + at, n);
      value = n === 8 ? view.getBigUint64(0, true) : BigInt(view.getUint32(0, true));
      at += n;
    } else if (wireType === 2) {
      let length;
      [length, at] = readVarint(bytes, at);
      if (length > BigInt(bytes.length - at)) throw new RecordDecodeError('length-delimited field runs past the end');
      value = bytes.subarray(at, at + Number(length));
      at += Number(length);
    } else {
      throw new RecordDecodeError(`wire type ${wireType} is not used by these messages`);
    }
    fields.push({ number, wireType, value, start, end: at });
  }
  return fields;
}

// A small schema language: name -> [type, repeated]. Types: string, bytes,
// bool, uint32, uint64, int64, double, a message schema, or 'struct' /
// 'credential'. Unknown field numbers are skipped (forward compatibility);
// a known field with the wrong wire type is an error.
const WIRE_OF = { string: 2, bytes: 2, bool: 0, uint32: 0, uint64: 0, int64: 0, double: 1 };

function decodeMessage(bytes, schema, depth = 0) {
  if (depth > 64) throw new RecordDecodeError('message nested too deeply');
  const out = {};
  for (const [, [name, , repeated]] of Object.entries(schema)) if (repeated) out[name] = [];
  for (const field of protobufFields(bytes)) {
    const spec = schema[field.number];
    if (!spec) continue;
    const [name, type, repeated] = spec;
    const expectedWire = typeof type === 'string' && type in WIRE_OF ? WIRE_OF[type] : 2;
    // Packed repeated scalars (proto3's default for `repeated uint64`).
    if (repeated && expectedWire === 0 && field.wireType === 2) {
      let at = 0;
      while (at < field.value.length) {
        let v;
        [v, at] = readVarint(field.value, at);
        out[name].push(scalar(type, v));
      }
      continue;
    }
    if (field.wireType !== expectedWire) throw new RecordDecodeError(`field ${name} has wire type ${field.wireType}`);
    const value = decodeValue(type, field.value, depth);
    if (repeated) out[name].push(value);
    else out[name] = value;
  }
  return out;
}

function scalar(type, v) {
  switch (type) {
    case 'bool': return v !== 0n;
    case 'uint32': return Number(BigInt.asUintN(32, v));
    case 'int64': return Number(BigInt.asIntN(64, v));
    case 'double': return new DataView(new BigUint64Array([v]).buffer).getFloat64(0, true);
    default: return Number(v); // uint64: versions and nonces stay far below 2^53
  }
}

function decodeValue(type, raw, depth) {
  if (type === 'string') {
    try {
      return utf8Decoder.decode(raw);
    } catch {
      throw new RecordDecodeError('a string field is not UTF-8');
    }
  }
  if (type === 'bytes') return raw;
  if (type === 'struct') return decodeStruct(raw, depth + 1);
  if (typeof type === 'object') return decodeMessage(raw, type, depth + 1);
  return scalar(type, raw);
}

// google.protobuf.Struct / Value / ListValue, to plain JSON.
function decodeStruct(bytes, depth) {
  if (depth > 64) throw new RecordDecodeError('struct nested too deeply');
  const out = {};
  for (const entry of protobufFields(bytes)) {
    if (entry.number !== 1 || entry.wireType !== 2) continue;
    let key = '';
    let value = null;
    for (const f of protobufFields(entry.value)) {
      if (f.number === 1 && f.wireType === 2) key = decodeValue('string', f.value, depth);
      if (f.number === 2 && f.wireType === 2) value = decodeStructValue(f.value, depth + 1);
    }
    out[key] = value;
  }
  return out;
}

function decodeStructValue(bytes, depth) {
  if (depth > 64) throw new RecordDecodeError('struct nested too deeply');
  let value = null;
  for (const f of protobufFields(bytes)) {
    if (f.number === 1) value = null;
    else if (f.number === 2 && f.wireType === 1) value = scalar('double', f.value);
    else if (f.number === 3 && f.wireType === 2) value = decodeValue('string', f.value, depth);
    else if (f.number === 4 && f.wireType === 0) value = f.value !== 0n;
    else if (f.number === 5 && f.wireType === 2) value = decodeStruct(f.value, depth + 1);
    else if (f.number === 6 && f.wireType === 2) {
      value = protobufFields(f.value)
        .filter((item) => item.number === 1 && item.wireType === 2)
        .map((item) => decodeStructValue(item.value, depth + 1));
    }
  }
  return value;
}

const CREDENTIAL = { 1: ['subject', 'string'], 2: ['role', 'string'] };
const DIE = { 1: ['sides', 'uint32'], 2: ['value', 'int64'], 3: ['kept', 'bool'], 4: ['rerolled', 'bool'], 5: ['exploded', 'bool'] };
const EVENT_SCHEMAS = {
  1: ['BattleOpened', {
    1: ['ruleset', 'string'], 2: ['title', 'string'], 3: ['forum_ref', 'string'], 4: ['participants', 'struct', true],
    5: ['client_seed', 'string'], 6: ['commitment', 'string'], 7: ['tenant', 'string'],
    8: ['commitment_signature', 'bytes'], 9: ['roller_key', 'bytes'], 10: ['credential', CREDENTIAL],
  }],
  2: ['SeedCommitted', { 1: ['epoch', 'uint32'], 2: ['commitment', 'string'], 3: ['commitment_signature', 'bytes'], 4: ['roller_key', 'bytes'] }],
  3: ['DiceRolled', {
    1: ['epoch', 'uint32'], 2: ['nonce', 'uint64'], 3: ['expression', 'string'], 4: ['purpose', 'string'],
    5: ['actor', 'string'], 6: ['dice', DIE, true], 7: ['total', 'int64'], 8: ['error', 'string'],
  }],
  4: ['ActionResolved', {
    1: ['action', 'struct'], 2: ['rolls', 'uint64', true], 3: ['outcome', 'struct'], 4: ['summary_ru', 'string'],
    5: ['summary_en', 'string'], 6: ['credential', CREDENTIAL],
  }],
  5: ['DisputeRaised', { 1: ['by', 'string'], 2: ['refers_to', 'uint64'], 3: ['reason', 'string'], 4: ['credential', CREDENTIAL] }],
  6: ['JudgeRuling', {
    1: ['judge', 'string'], 2: ['refers_to', 'uint64'], 3: ['text', 'string'], 4: ['override', 'struct'], 5: ['credential', CREDENTIAL],
  }],
  7: ['SeedRevealed', { 1: ['epoch', 'uint32'], 2: ['server_seed', 'string'], 3: ['credential', CREDENTIAL] }],
  8: ['BattleClosed', { 1: ['by', 'string'], 2: ['reason', 'string'], 3: ['credential', CREDENTIAL] }],
};

// proto3 leaves default values out of the wire; give them back so that a
// decoded event has every field (a roll of epoch 0 has `epoch: 0`).
const DEFAULTS = { string: '', bytes: new Uint8Array(0), bool: false, uint32: 0, uint64: 0, int64: 0, double: 0, struct: null };

function withDefaults(decoded, schema) {
  for (const [name, type, repeated] of Object.values(schema)) {
    if (name in decoded) continue;
    if (repeated) decoded[name] = [];
    else if (typeof type === 'string') decoded[name] = DEFAULTS[type];
    else decoded[name] = null;
  }
  if (Array.isArray(decoded.dice)) decoded.dice = decoded.dice.map((d) => withDefaults(d, DIE));
  return decoded;
}

const JOURNAL_RECORD = {
  1: ['stream_id', 'string'], 2: ['version', 'uint64'], 3: ['event_id', 'string'], 4: ['event_type', 'string'],
  5: ['recorded_at_unix_micros', 'int64'], 6: ['idempotency_key', 'string'], 7: ['payload', 'bytes'],
};

/**
 * Decodes a journal record (JournalRecord) and its payload (BattleEvent).
 * Returns { stream_id, version, event_id, event_type, recorded_at_unix_micros,
 * idempotency_key, event } where `event` has `type` and the fields of
 * PROTOCOL.md §4, named as in the export (bytes as lowercase hex, left out
 * when empty; `error` left out when empty), plus `credential` when recorded.
 */
export function decodeRecord(bytes) {
  const record = withDefaults(decodeMessage(bytes, JOURNAL_RECORD), JOURNAL_RECORD);
  const oneof = protobufFields(record.payload).filter((f) => f.number in EVENT_SCHEMAS);
  if (oneof.length === 0) throw new RecordDecodeError('the payload holds no battle event');
  // A oneof on the wire: the last one wins, as protobuf parsers do.
  const chosen = oneof[oneof.length - 1];
  if (chosen.wireType !== 2) throw new RecordDecodeError('the battle event is not a message');
  const [type, schema] = EVENT_SCHEMAS[chosen.number];
  const event = withDefaults(decodeMessage(chosen.value, schema), schema);
  for (const name of ['commitment_signature', 'roller_key']) {
    if (name in event) {
      if (event[name].length === 0) delete event[name];
      else event[name] = bytesToHex(event[name]);
    }
  }
  if (type === 'DiceRolled' && event.error === '') delete event.error;
  if (event.credential === null) delete event.credential;
  const { payload, ...rest } = record;
  return { ...rest, event: { type, ...event } };
}

// ---------------------------------------------------------------------------
// Exports (PROTOCOL.md §4)
// ---------------------------------------------------------------------------

/** The text is not an export at all (as opposed to an export that fails). */
export class ExportFormatError extends Error {
  constructor(line, message) {
    super(line ? `line ${line}: ${message}` : message);
    this.name = 'ExportFormatError';
    this.line = line;
  }
}

function parseExportLines(text) {
  if (typeof text !== 'string') throw new ExportFormatError(0, 'an export is text');
  const lines = [];
  let trailer = null;
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    if (trailer) throw new ExportFormatError(line, 'a line follows the trailer (the line without a version)');
    let value;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      throw new ExportFormatError(line, `not JSON: ${e.message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ExportFormatError(line, 'not a JSON object');
    if (!('version' in value)) {
      // §5: the export's last line, without a version, is its trailer.
      trailer = { line, value };
      return;
    }
    for (const [name, kind] of [['stream', 'string'], ['hash', 'string'], ['record', 'string']]) {
      if (typeof value[name] !== kind) throw new ExportFormatError(line, `field ${name} is missing or not a ${kind}`);
    }
    if (!Number.isSafeInteger(value.version) || value.version < 0) {
      throw new ExportFormatError(line, 'field version is not a non-negative integer');
    }
    lines.push({ line, value });
  });
  if (lines.length === 0) throw new ExportFormatError(0, 'the export holds no event');
  return { lines, trailer };
}

function sameJson(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => k in b && sameJson(a[k], b[k]));
}

/**
 * Verifies an export: the chain, each record against its line, each epoch's
 * commitment against its revealed seed, and every roll re-derived. See the
 * top of this file for the report's shape.
 */
export async function verifyExport(text, options = {}) {
  const { lines, trailer } = parseExportLines(text);
  const stream = options.stream ?? lines[0].value.stream;
  const problems = [];
  const events = [];
  const find = (version, check, message, event) => {
    problems.push({ version, check, message });
    if (event) event.problems.push(`${check}: ${message}`);
  };

  // --- 1. The chain and the records -------------------------------------
  let previous = await genesisHash(stream);
  let expectedVersion = 0;
  for (const { line, value } of lines) {
    const version = value.version;
    const event = {
      version, line, type: null, hash: 'ok', link: 'ok', record: 'ok', event: 'ok',
      check: 'ok', problems: [], decoded: null, unchecked: [],
    };
    events.push(event);
    if (value.stream !== stream) {
      event.link = 'bad';
      find(version, 'record', `the line names stream ${JSON.stringify(value.stream)}, not ${JSON.stringify(stream)}`, event);
    }
    if (version !== expectedVersion) {
      event.link = 'bad';
      // A gap is reported at the first missing version: that is where the
      // export stops being the journal's.
      const at = Math.min(version, expectedVersion);
      const message = version > expectedVersion
        ? `version ${expectedVersion} expected here, found version ${version}: missing or out of order`
        : `version ${version} comes again or out of order after version ${expectedVersion - 1}`;
      find(at, 'sequence', message, event);
    }
    expectedVersion = version + 1;

    let record = null;
    try {
      record = base64ToBytes(value.record);
    } catch {
      event.record = 'bad';
      find(version, 'record', 'the record is not base64', event);
    }
    let claimed = null;
    try {
      claimed = hexToBytes(value.hash);
      if (claimed.length !== 32) throw new TypeError('length');
    } catch {
      claimed = null;
      event.hash = 'bad';
      find(version, 'chain', 'the hash is not 64 hex digits', event);
    }
    if (record && claimed) {
      const computed = await chainHash(previous, record);
      if (!bytesEqual(computed, claimed)) {
        event.hash = 'bad';
        find(version, 'chain', 'the hash does not follow from the previous hash and this record', event);
      }
    }
    // Go on from the hash the line claims, so that one broken link is one
    // finding and not a finding on every later line.
    if (claimed) previous = claimed;
    if (!record) continue;

    let decoded;
    try {
      decoded = decodeRecord(record);
    } catch (e) {
      event.record = 'bad';
      find(version, 'record', `the record bytes do not decode: ${e.message}`, event);
      continue;
    }
    event.decoded = decoded;
    event.type = decoded.event.type;
    if (decoded.stream_id !== stream) {
      event.record = 'bad';
      find(version, 'record', `the record belongs to stream ${JSON.stringify(decoded.stream_id)}`, event);
    }
    if (decoded.version !== version) {
      event.record = 'bad';
      find(version, 'record', `the record says version ${decoded.version}`, event);
    }
    // The line's `event` is for people to read; the record is what is
    // hashed. Whatever both show must agree, or a reader is being misled.
    const shown = value.event;
    if (shown !== undefined && shown !== null) {
      if (typeof shown !== 'object' || Array.isArray(shown)) {
        event.event = 'bad';
        find(version, 'event', 'the event shown is not an object', event);
      } else {
        for (const [key, fromRecord] of Object.entries(decoded.event)) {
          if (key in shown && !sameJson(shown[key], fromRecord)) {
            event.event = 'bad';
            find(version, 'event', `the event shown differs from the record in ${key}`, event);
          }
        }
        event.unchecked = Object.keys(shown).filter((k) => !(k in decoded.event));
      }
    }
  }

  // --- 2. The battle: commitments, nonces, epochs, rolls -----------------
  const decodedEvents = events.filter((e) => e.decoded);
  // First pass: each epoch's commitment and the first seed revealed for it,
  // checked against each other, so that the rolls (which come before their
  // reveal) know whether their seed can be trusted.
  const commitments = new Map(); // epoch -> CommitmentResult
  const reveals = new Map(); // epoch -> { seed, version, matches }
  let clientSeed = null;
  for (const e of decodedEvents) {
    const ev = e.decoded.event;
    const epochOf = ev.type === 'BattleOpened' ? 0 : ev.epoch;
    if ((ev.type === 'BattleOpened' && clientSeed === null) || (ev.type === 'SeedCommitted' && !commitments.has(ev.epoch))) {
      if (ev.type === 'BattleOpened') clientSeed = ev.client_seed;
      commitments.set(epochOf, {
        epoch: epochOf, commitment: ev.commitment, version: e.version, revealedAt: null, check: 'unrevealed', signature: 'unsigned',
      });
    } else if (ev.type === 'SeedRevealed' && !reveals.has(ev.epoch)) {
      let matches = false;
      try {
        matches = commitments.has(ev.epoch) && (await commitmentOf(ev.server_seed)) === commitments.get(ev.epoch).commitment;
      } catch {
        matches = false; // not 64 hex digits
      }
      reveals.set(ev.epoch, { seed: ev.server_seed, version: e.version, matches });
      const c = commitments.get(ev.epoch);
      if (c) {
        c.revealedAt = e.version;
        c.check = matches ? 'ok' : 'bad';
      }
    }
  }
  if (clientSeed === null && decodedEvents.length > 0) {
    find(decodedEvents[0].version, 'sequence', 'no BattleOpened: the client seed and the epoch-0 commitment are missing', decodedEvents[0]);
  }

  // Signatures (docs/PROTOCOL-signatures.md §4): every commitment signed,
  // all by one roller key, and by the published one when it is given. The
  // fields come from the record (decodeRecord shows bytes as hex).
  let rollerKey = null;
  const trusted = options.rollerKey ? String(options.rollerKey).trim().toLowerCase() : null;
  for (const c of commitments.values()) {
    const e = events.find((x) => x.version === c.version);
    const ev = e.decoded.event;
    if (!ev.commitment_signature || !ev.roller_key) {
      c.signature = 'unsigned';
      find(c.version, 'signature', `the commitment of epoch ${c.epoch} is not signed`, e);
      continue;
    }
    rollerKey ??= ev.roller_key;
    const valid = await verifyEd25519(hexToBytes(ev.roller_key), hexToBytes(ev.commitment_signature), commitmentMessage(stream, c.epoch, c.commitment));
    if (valid === null) {
      c.signature = 'not checked';
    } else if (!valid) {
      c.signature = 'bad';
      find(c.version, 'signature', `the signature of the commitment of epoch ${c.epoch} does not verify with the roller key it names`, e);
      continue;
    } else {
      c.signature = 'ok';
    }
    if (ev.roller_key !== rollerKey) {
      c.signature = 'bad';
      find(c.version, 'signature', `epoch ${c.epoch} is signed by roller key ${ev.roller_key}, not the battle's ${rollerKey}`, e);
    } else if (trusted && ev.roller_key !== trusted) {
      c.signature = 'bad';
      find(c.version, 'signature', `epoch ${c.epoch} is signed by roller key ${ev.roller_key}, not the one given (${trusted})`, e);
    }
  }

  // Second pass, in journal order: the rules of §1–§2 about epochs and
  // nonces, and every roll re-derived.
  const rolls = [];
  let nextNonce = 0;
  let epoch = 0;
  let opened = false;
  const revealedSoFar = new Set();
  const seenNonces = new Map(); // nonce -> version
  for (const e of decodedEvents) {
    const ev = e.decoded.event;
    if (ev.type === 'BattleOpened') {
      if (e.version !== 0 || opened) find(e.version, 'sequence', 'BattleOpened is not the first event', e);
      opened = true;
    } else if (ev.type === 'SeedCommitted') {
      // A new epoch follows the reveal of the current one (§1), never a
      // live one: otherwise the seed of an unfinished epoch could be dropped.
      if (ev.epoch !== epoch + 1 || !revealedSoFar.has(epoch)) {
        find(e.version, 'commitment', `epoch ${ev.epoch} committed while epoch ${epoch} is current${revealedSoFar.has(epoch) ? '' : ' and not revealed'}`, e);
      }
      epoch = ev.epoch;
    } else if (ev.type === 'SeedRevealed') {
      const reveal = reveals.get(ev.epoch);
      if (!commitments.has(ev.epoch)) {
        find(e.version, 'commitment', `epoch ${ev.epoch} is revealed but was never committed`, e);
      } else if (reveal.version === e.version && !reveal.matches) {
        find(e.version, 'commitment', `the seed revealed for epoch ${ev.epoch} does not hash to its commitment ${commitments.get(ev.epoch).commitment}`, e);
      } else if (reveal.version !== e.version && reveal.seed !== ev.server_seed) {
        find(e.version, 'commitment', `epoch ${ev.epoch} is revealed again with another seed`, e);
      }
      revealedSoFar.add(ev.epoch);
    } else if (ev.type === 'DiceRolled') {
      const roll = {
        version: e.version, nonce: ev.nonce, epoch: ev.epoch, expression: ev.expression,
        check: 'ok', problems: [], recorded: { dice: ev.dice, total: ev.total, error: ev.error ?? null }, derived: null,
      };
      rolls.push(roll);
      const bad = (check, message) => {
        roll.check = 'bad';
        roll.problems.push(message);
        find(e.version, check, message, e);
      };
      if (ev.nonce !== nextNonce) {
        bad('nonce', seenNonces.has(ev.nonce)
          ? `nonce ${ev.nonce} was already used at version ${seenNonces.get(ev.nonce)}`
          : `nonce ${nextNonce} expected, found ${ev.nonce}`);
      }
      seenNonces.set(ev.nonce, e.version);
      nextNonce = ev.nonce + 1;
      if (ev.epoch !== epoch) bad('roll', `rolled in epoch ${ev.epoch} while epoch ${epoch} is current`);
      if (revealedSoFar.has(ev.epoch)) bad('roll', `rolled in epoch ${ev.epoch} after its seed was revealed: anyone could have predicted it`);
      const reveal = reveals.get(ev.epoch);
      if (!reveal || clientSeed === null) {
        if (roll.check === 'ok') roll.check = 'unrevealed';
        continue;
      }
      if (!reveal.matches) {
        // The fault is the reveal's (reported at its version): this roll is
        // not re-derived from a seed nobody committed to, and stays
        // unverified — bad, but not the export's first failure.
        roll.check = 'bad';
        const message = `the seed revealed for epoch ${ev.epoch} at version ${reveal.version} does not match its commitment`;
        roll.problems.push(message);
        e.problems.push(`roll: ${message}`);
        continue;
      }
      let derived;
      try {
        derived = await deriveRoll(reveal.seed, clientSeed, ev.nonce, ev.expression);
      } catch (err) {
        bad('roll', err instanceof DiceExpressionError
          ? `the expression does not parse: ${err.message}`
          : `cannot re-derive: ${err.message}`);
        continue;
      }
      roll.derived = { dice: derived.dice, total: derived.total, error: derived.error ? derived.error.message : null };
      for (const m of compareDice(derived.dice, ev.dice)) bad('roll', m);
      if (derived.total !== ev.total) bad('roll', `total ${ev.total} recorded, ${derived.total} re-derived`);
      // The error's wording is each implementation's own; whether there is
      // one is not.
      if (Boolean(derived.error) !== Boolean(ev.error)) {
        bad('roll', derived.error ? `the arithmetic fails (${derived.error.message}) but no error is recorded` : `an error is recorded (${ev.error}) but the arithmetic succeeds`);
      }
    } else if (ev.type === 'ActionResolved') {
      // The rolls an action used are earlier rolls of this battle.
      for (const nonce of ev.rolls) {
        if (!seenNonces.has(nonce)) find(e.version, 'roll', `the action uses nonce ${nonce}, which no earlier roll has`, e);
      }
    }
  }

  // --- 3. The end of the export: a head given by the caller, a trailer ----
  const last = lines[lines.length - 1].value;
  // Closing reveals the seed (§1), in the same append as the close: a closed
  // battle with a secret epoch is an export cut short (or a journal that
  // skipped the reveal) — reported where the export stops.
  const closedAt = decodedEvents.find((e) => e.decoded.event.type === 'BattleClosed');
  if (closedAt) {
    for (const c of commitments.values()) {
      if (c.revealedAt === null) {
        find(last.version + 1, 'commitment', `the battle is closed (version ${closedAt.version}) but the export ends with the seed of epoch ${c.epoch} unrevealed: it is cut short or the reveal is missing`, null);
      }
    }
  }
  const headHash = last.hash;
  let head = null;
  if (options.head) {
    const given = String(options.head).trim().toLowerCase();
    const match = lines.find((l) => l.value.hash.toLowerCase() === given);
    if (match && match === lines[lines.length - 1]) {
      head = { given, check: 'ok', message: `the export ends at the head given (version ${last.version})` };
    } else if (match) {
      // The forum posted an earlier head; the export continues it.
      head = { given, check: 'ok', message: `the head given is version ${match.value.version}; the export goes on to version ${last.version}` };
    } else {
      head = { given, check: 'bad', message: 'no event of the export has the head hash given: the export is cut short or not the battle the head is of' };
      find(last.version + 1, 'head', head.message, null);
    }
  }
  let trailerResult = null;
  if (trailer) {
    const h = trailer.value.head;
    const ok = h && h.stream === stream && h.version === last.version && typeof h.hash === 'string' && h.hash.toLowerCase() === headHash.toLowerCase();
    trailerResult = { head: ok ? 'ok' : 'bad', signatures: 'not checked' };
    if (!ok) find(last.version + 1, 'head', "the trailer's head is not the export's last event", null);
  }

  // --- 4. Verdict ---------------------------------------------------------
  problems.sort((a, b) => a.version - b.version);
  const rollsByVersion = new Map(rolls.map((r) => [r.version, r]));
  for (const e of events) {
    if (e.problems.length > 0) e.check = 'bad';
    else if (rollsByVersion.get(e.version)?.check === 'unrevealed') e.check = 'unrevealed';
  }
  const commitmentList = [...commitments.values()].sort((a, b) => a.epoch - b.epoch);
  let status = 'verified';
  if (problems.length > 0) status = 'failed';
  else if (rolls.some((r) => r.check === 'unrevealed') || commitmentList.some((c) => c.check === 'unrevealed')) status = 'unrevealed';
  return {
    status,
    firstFailure: problems.length > 0 ? problems[0].version : null,
    stream,
    headHash,
    events,
    rolls,
    commitments: commitmentList,
    problems,
    head,
    trailer: trailerResult,
    rollerKey,
  };
}
