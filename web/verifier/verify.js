// battlelog verifier: a second, independent implementation of the
// verification protocol v1 (docs/protocol.md §1–§4), written from the protocol
// text rather than from the Rust code, so that a bug in one implementation
// shows up as a disagreement with the other.
//
// Small ES modules with no dependencies beyond the vendored, audited
// @noble/ed25519 (vendor/): they run unchanged in a browser (the battle page
// and /verify load these very files) and under Node 20. This file is the
// public entry: it re-exports the API; the work is in
//
//   bytes.js      hex, base64, UTF-8
//   hash.js       SHA-256, HMAC-SHA256 (WebCrypto), commitment, roll key (§1, §2)
//   chacha20.js   ChaCha20 and the die face (§2)
//   dice.js       dice expressions: parse, evaluate, re-derive a roll (§3)
//   protobuf.js   the journal record read from its wire format
//   chain.js      the hash chain (§4)
//   signatures.js the roller's Ed25519 signatures (WebCrypto, else vendored JS)
//   transparency.js §5: Merkle leaves and inclusion proofs, the signed
//                 checkpoint (C2SP signed note), the signed head, the trailer
//   audit.js      verifyExport: everything above over a whole export
//   checks.js     the verdict's list of checks, with counts, in en/ru
//   dom.js        marking a page by the DOM contract (what is drawn vs verified)
//   rules/        outcomes re-resolved under docs/rules.md (rules/index.js)
//   worker.js     verifyExport in a Web Worker (the pages use it)
//   fetch-export.js the battle page's export read from the server
//   pages/        each page's own script SHA-256 and HMAC-SHA256 come
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
//   verifyExport(text, { head, stream, rollerKeys, rollerKey, logKeys, logKey, onProgress, rules }) -> ExportReport
//       text: a `battlelog export` (JSON Lines); head: optional hex hash the
//       forum posted (a cut-short export then fails); stream: optional battle
//       id the caller expects; rollerKeys / rollerKey: the trusted roller
//       keys (hex; every commitment must then be signed by one of them);
//       logKeys / logKey: the trusted log keys (C2SP verifier keys; a
//       trailer's log_key must then be one of them);
//       onProgress(done, total); rules: a rules module for tests and tools
//       (default: rules/index.js, loaded on first use).
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
//     trailer: null | { check: 'ok' | 'bad', failures: [{ what, message }],   // §5
//               logKey, keyStatus: 'pinned' | 'unpinned' | 'mismatch',
//               checkpoint: null | { origin, size, root, note } }
//         what: 'malformed' | 'log-key-not-trusted' | 'note-signature' |
//               'head-not-last-event' | 'head-signature' | 'inclusion-proof';
//         each failure is also a problem { check: 'checkpoint', what } at
//         the version after the last.
//     rollerKey, rollerKeyStatus: 'pinned' | 'unpinned' | 'mismatch', trustedKeys,
//     outcomes: null (no rules engine) | { checked, bad }
//   }
//   EventResult = { version, line, type, hash, link, record, event,   // 'ok' | 'bad'
//                   check: 'ok' | 'bad' | 'unrevealed', problems, decoded }
//   RollResult = { version, nonce, epoch, expression,
//                  check: 'ok' | 'bad' | 'unrevealed', problems, recorded, derived }
//   CommitmentResult = { epoch, commitment, version, revealedAt,
//                        check: 'ok' | 'bad' | 'unrevealed',       // seed vs commitment
//                        signature: 'ok' | 'bad' | 'unsigned' }
//   report.rollerKey: hex of the key that signed the battle's first signed
//   commitment (null: none), to compare with the one the operator publishes.
//
// Lower-level helpers are exported too, for tests and tools: chacha20Block,
// RollWords, dieFace, sha256, hmacSha256, commitmentOf, rollKeyOf, rollKeyOfV2,
// deriveServerSeed, genesisHash, chainHash, protobufFields, decodeRecord,
// hexToBytes, bytesToHex, base64ToBytes, bytesToBase64; and protocol v2's
// beacon (§6.1, beacon.js): verifyBeaconRound, publishedAt, roundAfter, QUICKNET.
//
// It also checks the roller's Ed25519 signature on every commitment
// (docs/PROTOCOL-signatures.md) with WebCrypto's Ed25519 where the browser
// has it, else with the vendored @noble/ed25519: never left unchecked.
// WebCrypto verifies as RFC 8032 says; unlike ed25519-dalek's verify_strict
// it may accept a small-order key or R, which the roller never makes.
// Outcomes are re-resolved under docs/rules.md by rules/index.js when it loads.
//
// §5: an export's last line without a version is its trailer; its signed
// checkpoint, log key, head, head signature and inclusion proof are checked
// (transparency.js). An export without one is checked as far as §4 goes,
// and the report's trailer is null (the page says so).

export const PROTOCOL = 'battlelog/v1';

export { base64ToBytes, bytesToBase64, bytesToHex, hexToBytes } from './bytes.js';
export { commitmentOf, deriveServerSeed, hmacSha256, rollKeyOf, rollKeyOfV2, sha256 } from './hash.js';
export { RollWords, chacha20Block, dieFace } from './chacha20.js';
export {
  DiceExpressionError, LIMITS, deriveRoll, deriveRollWithKey, evaluateExpression, parseExpression, verifyRoll,
} from './dice.js';
export { RecordDecodeError, decodeRecord, protobufFields } from './protobuf.js';
export { chainHash, genesisHash } from './chain.js';
export { commitmentMessage, hasEd25519, verifyEd25519, verifyEd25519Js } from './signatures.js';
export { BEACON_DST, QUICKNET, publishedAt, roundAfter, roundMessage, verifyBeaconRound } from './beacon.js';
export { ExportFormatError, verifyExport } from './audit.js';
export {
  TransparencyError, checkTrailer, headMessage, keyIdOf, leafHash, leafInput, nodeHash, openCheckpoint, openNote,
  parseCheckpointText, parseNote, parseVerifierKey, verifyInclusion,
} from './transparency.js';
