#!/usr/bin/env node
// Forges exports the way a careful cheat would, to prove the verifier
// catches it: `die` changes one die (and the total with it) inside the
// hashed record bytes and in the readable event, then recomputes the chain
// from there on, so the chain alone verifies; `drop` removes one event;
// `crit` turns an attack's hit into a crit (outcome and summaries, in
// the record and the readable event, the chain recomputed); `resign` signs
// every commitment again with another roller key (the chain recomputed)
// and drops the export's §5 trailer, which no forger can sign again (its
// head names the old last hash): everything verifies, as far as §4 goes,
// except against the trusted key; `sig` changes one
// bit of the battle's first commitment signature (the chain recomputed).
//
//   node tools/tamper.mjs die     IN OUT [WHERE]   (default: the first roll whose seed is revealed)
//   node tools/tamper.mjs drop    IN OUT [WHERE]   (default: the first roll)
//   node tools/tamper.mjs outcome IN OUT [WHERE]   (default: the last action a
//        ruleset resolved with a number or a flag in its outcome): its recorded outcome changed (a hit made a crit,
//        else a number raised, else a flag flipped) in the record and the
//        event, the chain recomputed: only re-resolving the rules finds it.
//   node tools/tamper.mjs crit    IN OUT [WHERE]   (default: the first action with damage): a
//        pokemon hit made a crit with three times the damage, summaries included.
//   node tools/tamper.mjs resign  IN OUT           (prints 0)
//   node tools/tamper.mjs sig     IN OUT           (prints 0)
//
// WHERE is a version, or `first-roll`, `last-roll` or `last-action`, so
// that a script can aim at an event without knowing the battle's versions.
//
// Prints the version the verifier must report as the first failure.
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';

import { base64ToBytes, bytesToBase64, bytesToHex, chainHash, decodeRecord, genesisHash, hexToBytes } from '../verify.js';
import { commitmentMessage } from '../verify.js';
import { rollerSigner } from './make-export.mjs';
import { bytesField, messageField, rewrite, rewriteNested, setVarint, struct } from './protobuf.mjs';

function eventLines(text) {
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
}

function decoded(line) {
  return decodeRecord(base64ToBytes(line.record)).event;
}

function decodedLines(lines) {
  return lines.filter((l) => 'version' in l).map((l) => ({ version: l.version, event: decoded(l) }));
}

/** A version from a selector: a number, `first-roll`, `last-roll`, `last-action` or `first-damage` (an action with damage). */
export function locate(text, where) {
  if (/^[0-9]+$/.test(String(where))) return Number(where);
  const events = decodedLines(eventLines(text));
  if (where === 'first-damage') {
    const hit = events.find((e) => e.event.type === 'ActionResolved' && typeof e.event.outcome?.damage === 'number' && e.event.outcome.damage > 0);
    if (!hit) throw new Error('the export has no action with damage');
    return hit.version;
  }
  const type = { 'first-roll': 'DiceRolled', 'last-roll': 'DiceRolled', 'last-action': 'ActionResolved' }[where];
  if (!type) throw new Error(`unknown selector ${where}`);
  const matching = events.filter((e) => e.event.type === type);
  if (matching.length === 0) throw new Error(`the export has no ${type}`);
  return (where.startsWith('first') ? matching[0] : matching.at(-1)).version;
}

function firstRoll(lines, { revealed }) {
  const revealedEpochs = new Set(lines.filter((l) => 'version' in l && decoded(l).type === 'SeedRevealed').map((l) => decoded(l).epoch));
  const roll = lines.find((l) => 'version' in l && decoded(l).type === 'DiceRolled' && (!revealed || revealedEpochs.has(decoded(l).epoch)));
  if (!roll) throw new Error(revealed ? 'the export has no roll whose seed is revealed' : 'the export has no roll');
  return roll.version;
}

/** Recomputes h(v) for every event line from index `from` on (§4). */
export async function rechain(lines, from) {
  const events = lines.filter((l) => 'version' in l);
  let previous = from === 0 ? await genesisHash(events[0].stream) : hexToBytes(events[from - 1].hash);
  for (let i = from; i < events.length; i++) {
    previous = await chainHash(previous, base64ToBytes(events[i].record));
    events[i].hash = bytesToHex(previous);
  }
}

/** One die of a roll changed in the record and the event, the chain recomputed after it. */
export async function changeDie(text, version) {
  const lines = eventLines(text);
  const target = version ?? firstRoll(lines, { revealed: true });
  const index = lines.findIndex((l) => l.version === target);
  if (index < 0) throw new Error(`the export has no version ${target}`);
  const line = lines[index];
  const event = decoded(line);
  if (event.type !== 'DiceRolled' || event.dice.length === 0) throw new Error(`version ${target} is not a roll with dice`);
  const die = event.dice[0];
  // Another face the die could show (a fudge die shows −1, 0, +1).
  const changed = die.value >= 1 && die.value <= die.sides ? (die.value % die.sides) + 1 : die.value === 1 ? -1 : die.value + 1;
  const total = event.total + (die.kept ? changed - die.value : 0);
  // JournalRecord.payload (7) → BattleEvent.dice_rolled (3) → DiceRolled:
  // Die (6, the first) value (2), and total (7).
  line.record = bytesToBase64(
    rewriteNested(base64ToBytes(line.record), 7, 0, (payload) =>
      rewriteNested(payload, 3, 0, (rolled) => setVarint(rewriteNested(rolled, 6, 0, (d) => setVarint(d, 2, changed)), 7, total)),
    ),
  );
  if (line.event && Array.isArray(line.event.dice)) {
    line.event.dice[0].value = changed;
    line.event.total = total;
  }
  await rechain(lines, index);
  return { text: lines.map((l) => JSON.stringify(l)).join('\n') + '\n', version: target };
}

/** A recorded outcome as a cheat would improve it: a hit made a crit (its
 * damage doubled), else its first number raised by one, else its first
 * flag flipped. */
export function forgedOutcome(outcome) {
  if (outcome.result === 'hit') {
    const forged = { ...outcome, result: 'crit', multiplier: '2' };
    if (Number.isInteger(outcome.damage)) forged.damage = outcome.damage * 2 + 1;
    return forged;
  }
  const number = Object.keys(outcome).find((k) => Number.isInteger(outcome[k]));
  if (number) return { ...outcome, [number]: outcome[number] + 1 };
  const flag = Object.keys(outcome).find((k) => typeof outcome[k] === 'boolean');
  if (flag) return { ...outcome, [flag]: !outcome[flag] };
  return null;
}

/** One action's recorded outcome changed in the record and the event, the
 * chain recomputed after it. */
export async function changeOutcome(text, version) {
  const lines = eventLines(text);
  const forgeable = (l) => 'version' in l && decoded(l).type === 'ActionResolved' && decoded(l).action?.type !== 'roll'
    && decoded(l).outcome && forgedOutcome(decoded(l).outcome) !== null;
  const target = version ?? lines.filter(forgeable).at(-1)?.version;
  if (target === undefined) throw new Error('the export has no action resolved by a ruleset with an outcome to change');
  const index = lines.findIndex((l) => l.version === target);
  if (index < 0) throw new Error(`the export has no version ${target}`);
  const line = lines[index];
  const event = decoded(line);
  if (event.type !== 'ActionResolved' || !event.outcome) throw new Error(`version ${target} is not a resolved action`);
  const forged = forgedOutcome(event.outcome);
  if (forged === null) throw new Error(`version ${target}: the outcome has nothing to change`);
  // JournalRecord.payload (7) → BattleEvent.action_resolved (4) →
  // ActionResolved.outcome (3), a google.protobuf.Struct.
  line.record = bytesToBase64(
    rewriteNested(base64ToBytes(line.record), 7, 0, (payload) =>
      rewriteNested(payload, 4, 0, (resolved) =>
        rewrite(resolved, (fields) => fields.map((f) => (f.number === 3 ? { encoded: messageField(3, struct(forged)) } : f))),
      ),
    ),
  );
  if (line.event) line.event.outcome = forged;
  await rechain(lines, index);
  return { text: lines.map((l) => JSON.stringify(l)).join('\n') + '\n', version: target };
}

/** One event left out; nothing recomputed. */
export function dropEvent(text, version) {
  const lines = eventLines(text);
  const target = version ?? firstRoll(lines, { revealed: false });
  const kept = lines.filter((l) => l.version !== target);
  if (kept.length === lines.length) throw new Error(`the export has no version ${target}`);
  return { text: kept.map((l) => JSON.stringify(l)).join('\n') + '\n', version: target };
}

/** Replaces fields of the record's event (BattleEvent field `eventField`) with `encoded(fields)`. */
function replaceEventFields(line, eventField, edit) {
  line.record = bytesToBase64(
    rewriteNested(base64ToBytes(line.record), 7, 0, (payload) => rewriteNested(payload, eventField, 0, (inner) => rewrite(inner, edit))),
  );
}

/**
 * An attack's outcome forged: its hit becomes a crit with three times the
 * damage, the summaries say so, in the record (ActionResolved's outcome 3,
 * summary_ru 4, summary_en 5) and the readable event; the chain recomputed.
 * Dice, chain and signatures all verify: only the rules can tell.
 */
export async function forgeCrit(text, version) {
  const lines = eventLines(text);
  const target =
    version ??
    lines.find((l) => 'version' in l && decoded(l).type === 'ActionResolved' && typeof decoded(l).outcome?.damage === 'number' && decoded(l).outcome.damage > 0)
      ?.version;
  const index = lines.findIndex((l) => l.version === target);
  if (target === undefined || index < 0) throw new Error('the export has no action with damage');
  const line = lines[index];
  const event = decoded(line);
  if (event.type !== 'ActionResolved' || typeof event.outcome?.damage !== 'number') throw new Error(`version ${target} is not an action with damage`);
  const damage = event.outcome.damage * 3;
  const outcome = { ...event.outcome, result: 'crit', multiplier: '2', damage };
  const summaryEn = `${event.action.actor} → ${event.action.target}, ${event.action.move}: crit ×2, ${damage} damage`;
  const summaryRu = `${event.action.actor} → ${event.action.target}, «${event.action.move}»: крит ×2, урон ${damage}`;
  replaceEventFields(line, 4, (fields) =>
    fields.map((f) => {
      if (f.number === 3) return { encoded: messageField(3, struct(outcome)) };
      if (f.number === 4) return { encoded: bytesField(4, summaryRu) };
      if (f.number === 5) return { encoded: bytesField(5, summaryEn) };
      return f;
    }),
  );
  if (line.event) Object.assign(line.event, { outcome, summary_en: summaryEn, summary_ru: summaryRu });
  await rechain(lines, index);
  return { text: lines.map((l) => JSON.stringify(l)).join('\n') + '\n', version: target };
}

/**
 * Every commitment signed again by another roller key (BattleOpened's 8/9,
 * SeedCommitted's 3/4), the chain recomputed from the start. Everything
 * verifies, except that the key is not the one the site trusts: the first
 * failure, against a trusted key, is version 0.
 */
export async function resign(text, masterKeyHex = 'ee'.repeat(32)) {
  const lines = eventLines(text);
  const signer = await rollerSigner(masterKeyHex);
  for (const line of lines.filter((l) => 'version' in l)) {
    const event = decoded(line);
    const [field, sigField, keyField, epoch] =
      event.type === 'BattleOpened' ? [1, 8, 9, 0] : event.type === 'SeedCommitted' ? [2, 3, 4, event.epoch] : [];
    if (!field) continue;
    const signature = await signer.sign(commitmentMessage(line.stream, epoch, event.commitment));
    replaceEventFields(line, field, (fields) => [
      ...fields.filter((f) => f.number !== sigField && f.number !== keyField),
      { encoded: bytesField(sigField, signature) },
      { encoded: bytesField(keyField, signer.publicKey) },
    ]);
    if (line.event) Object.assign(line.event, { commitment_signature: bytesToHex(signature), roller_key: bytesToHex(signer.publicKey) });
  }
  await rechain(lines, 0);
  const events = lines.filter((l) => 'version' in l);
  return { text: events.map((l) => JSON.stringify(l)).join('\n') + '\n', version: 0, rollerKey: bytesToHex(signer.publicKey) };
}

/** One bit of BattleOpened's commitment_signature (8) changed, the chain recomputed: a bad signature. */
export async function badSignature(text) {
  const lines = eventLines(text);
  const line = lines.find((l) => l.version === 0);
  const event = decoded(line);
  if (event.type !== 'BattleOpened' || !event.commitment_signature) throw new Error('version 0 is not a signed BattleOpened');
  const signature = hexToBytes(event.commitment_signature);
  signature[10] ^= 0x01;
  replaceEventFields(line, 1, (fields) => fields.map((f) => (f.number === 8 ? { encoded: bytesField(8, signature) } : f)));
  if (line.event) line.event.commitment_signature = bytesToHex(signature);
  await rechain(lines, 0);
  return { text: lines.map((l) => JSON.stringify(l)).join('\n') + '\n', version: 0 };
}

async function main([how, input, output, version]) {
  if (!['die', 'drop', 'outcome', 'crit', 'resign', 'sig'].includes(how) || !input || !output) {
    process.stderr.write('usage: tamper.mjs die|drop|outcome|crit|resign|sig IN OUT [VERSION]\n');
    process.exit(2);
  }
  const text = fs.readFileSync(input, 'utf8');
  const at = version === undefined ? undefined : locate(text, version);
  const forged =
    how === 'die' ? await changeDie(text, at)
    : how === 'drop' ? dropEvent(text, at)
    : how === 'outcome' ? await changeOutcome(text, at)
    : how === 'crit' ? await forgeCrit(text, at)
    : how === 'sig' ? await badSignature(text)
    : await resign(text);
  fs.writeFileSync(output, forged.text);
  process.stdout.write(`${forged.version}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((e) => {
    process.stderr.write(`tamper: ${e.message}\n`);
    process.exit(2);
  });
}
