// The rules engine in JavaScript: an independent implementation of the
// rulesets of docs/rules.md (every version), written from docs/rules.md alone, so
// that a mistake in it or in the Rust rules shows up as a disagreement.
// No dependencies and no Node-only APIs: it runs in a page, a Web Worker
// and under node. Modules: common.js (rejections, fractions, field
// reading), pokemon.js, arcana.js, berserk.js, pbta.js (one per ruleset,
// both versions inside), outcomes.js (the fields an outcome may carry: what
// a ruling may override), this file (battles, rulings, exports).
//
// API
//   rulesetIds: string[]                      the supported `name@version` ids
//   openBattle(rulesetId, participants) → state
//       throws RulesRejection {reason, message} (an unknown ruleset, no
//       participant, an id twice, a sheet the ruleset refuses) or
//       RulesInputError (a sheet that does not read: no id, a field of the
//       wrong type).
//   resolveAction(state, action, dice, at?) →
//       { outcome, state }                     resolved; `state` is the next
//                                              state (the one given is never
//                                              changed)
//     | { rejected: message, reason }          the rules forbid the action
//     | { error: message, reason }             the dice do not fit it (count,
//                                              a face out of range), or the
//                                              action is not one of the
//                                              ruleset's (reason INVALID_INPUT)
//       `dice` are the faces in draw order; `at` is the key later actions
//       name it by (`against`, `refers_to`): the battle version in a
//       battle, the 0-based action line in a script (default: one after
//       the last recorded; it must grow). Rulings ({type:"ruling", judge,
//       refers_to, text, override?}) lay `override` over the referred
//       outcome (refused when it is no outcome of that action under the
//       battle's version) and fold the state again from the opening;
//       disputes ({type:"dispute", by, refers_to, reason}) only refer. A
//       free roll ({type:"roll"}) is no ruleset's: resolveAction refuses
//       it (INVALID_INPUT), recordAction records it.
//   diceNeeded(state, action) → [sides] | null
//       the dice the action needs now (their sides, in draw order), null
//       when the rules refuse it.
//   rollsNeeded(state, action) → [expression]
//       the same as the rolls the service asks the roller for: ['2d10'],
//       ['1d6', '1d6'] (checkOutcomes holds an action's rolls to it).
//   recordAction(state, action, outcome, at) → state
//       the state after an outcome that was recorded (not re-derived): what
//       checkOutcomes goes on from, as the audit does.
//   playScript(text) → [line]                 plays a script in the format of
//       `battlelog rules play` (an `open` line, then `action` lines with
//       `dice`) and returns one output line per action line:
//       {outcome} | {rejected} | {error}.
//   checkOutcomes(lines) → [{ version, ok, expected, recorded, problem, reason }]
//       `lines` are an export's parsed lines (`{version, event_type?, event}`,
//       `event` the readable event with its `type`, as export.jsonl holds
//       it or as verify.js's decodeRecord gives it; lines without a
//       `version` are skipped). Opens the battle from BattleOpened's
//       ruleset and participants, then re-resolves every ActionResolved
//       from the faces of the DiceRolled events its `rolls` nonces name
//       (every die's value, in recorded order; the rolls' expressions must
//       be rollsNeeded's, each die of the sides the rules ask for; a free
//       roll's outcome must be its roll's dice and total), folding
//       DisputeRaised and JudgeRuling (with its override) in between.
//       One entry per
//       ActionResolved, in order, plus one for an opening, dispute or
//       ruling that does not fold: `ok` true when the rules give exactly
//       the recorded outcome (deep-equal JSON); else `problem` is a short
//       English sentence naming what differs (the first differing
//       outcome field, or the rejection), `reason` a code
//       (OUTCOME_DIFFERS, REJECTED, DICE_MISMATCH, ROLL_MISSING,
//       NOT_OPENED, OPEN_REJECTED, RULING_REJECTED, DISPUTE_REJECTED,
//       FREE_ROLL_DIFFERS, INVALID_ACTION), `expected` what the rules give
//       (null when they give nothing) and `recorded` the recorded outcome.
//       It stops at nothing: after a difference it goes on from the
//       recorded outcome, so one bad action is one entry. Summaries
//       (summary_en/summary_ru) are not checked here.
import { DiceMismatch, RulesInputError, RulesRejection, checkDice, copy, invalid, isObject, reject } from './common.js';
import { arcana } from './arcana.js';
import { overrideProblem } from './outcomes.js';
import { berserk } from './berserk.js';
import { pbta } from './pbta.js';
import { pokemon } from './pokemon.js';

export { RulesRejection, RulesInputError, DiceMismatch };

const RULESETS = {
  'pokemon-d6@1': pokemon(1),
  'pokemon-d6@2': pokemon(2),
  'arcana-2d10@1': arcana(1),
  'arcana-2d10@2': arcana(2),
  'berserk@1': berserk(1),
  'berserk@2': berserk(2),
  'pbta-2d6@1': pbta(1),
  'pbta-2d6@2': pbta(2),
};

export const rulesetIds = Object.freeze(Object.keys(RULESETS));

function rulesOf(state) {
  return RULESETS[state.ruleset];
}

export function openBattle(rulesetId, participants) {
  const rules = RULESETS[rulesetId];
  if (!rules) reject('UNKNOWN_RULESET', `unknown ruleset \`${rulesetId}\``);
  if (!Array.isArray(participants)) invalid('participants: a list of sheets');
  if (participants.length === 0) reject('NO_PARTICIPANTS', 'a battle needs at least one participant');
  // The sheets are read whole before the rules judge them.
  participants.forEach((p, i) => readSheet(p, i));
  const seen = new Set();
  participants.forEach((p, i) => {
    checkSheet(rulesetId, p);
    if (seen.has(p.id)) reject('DUPLICATE_PARTICIPANT', `participant \`${p.id}\` is listed twice`);
    seen.add(p.id);
  });
  const sheets = copy(participants);
  return Object.freeze({ ruleset: rulesetId, participants: sheets, data: rules.init(sheets), log: emptyLog() });
}

// The battle's log: its entries in the order of their `at` (which only
// grows). States share one array and each reads only its first `length`
// entries, so that recording is not a copy of the whole log per action
// (a battle of thousands of actions stays linear); a state that records
// from an older point, or a ruling that changes an entry, copies.
function makeLog(entries, length) {
  // What a state's log holds is its first `length` entries, also as JSON.
  return Object.freeze({ entries, length, toJSON: () => entries.slice(0, length) });
}

function emptyLog() {
  return makeLog([], 0);
}

function logEntries(log) {
  return log.entries.length === log.length ? log.entries : log.entries.slice(0, log.length);
}

function logLast(log) {
  return log.length === 0 ? undefined : log.entries[log.length - 1];
}

function logAppend(log, entry) {
  const entries = log.entries.length === log.length ? log.entries : log.entries.slice(0, log.length);
  entries.push(entry);
  return makeLog(entries, log.length + 1);
}

function logFind(log, at) {
  let [lo, hi] = [0, log.length - 1];
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const e = log.entries[mid];
    if (e.at === at) return e;
    if (e.at < at) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

const TRAITS = ['brawn', 'grace', 'charm', 'grit', 'wits', 'cool'];

/** A participant's sheet, read (docs/rules.md §2: abilities with an optional
 * `per_episode` limit, §6.2.1 `magical` and `min_points`; §4: traits,
 * small integers). Every ruleset reads the same sheet shape. */
function readSheet(p, i) {
  if (!isObject(p) || typeof p.id !== 'string') invalid(`participants[${i}]: a sheet with an id`);
  for (const key of Object.keys(p)) if (!['id', 'abilities', 'traits'].includes(key)) invalid(`participants[${i}]: unknown field ${key}`);
  if (p.abilities !== undefined && p.abilities !== null) {
    if (!isObject(p.abilities)) invalid(`participants[${i}].abilities: an object`);
    const kinds = { per_episode: (v) => Number.isInteger(v) && v >= 0, magical: (v) => typeof v === 'boolean', min_points: (v) => Number.isInteger(v) && v >= 0 };
    for (const [name, ability] of Object.entries(p.abilities)) {
      if (!isObject(ability)) invalid(`participants[${i}].abilities.${name}: an object`);
      for (const [key, value] of Object.entries(ability)) {
        if (!(key in kinds)) invalid(`participants[${i}].abilities.${name}: unknown field ${key}`);
        if (value !== null && !kinds[key](value)) invalid(`participants[${i}].abilities.${name}.${key}: invalid value`);
      }
    }
  }
  if (p.traits !== undefined && p.traits !== null) {
    if (!isObject(p.traits)) invalid(`participants[${i}].traits: an object`);
    for (const [name, value] of Object.entries(p.traits)) {
      if (!Number.isInteger(value)) invalid(`participants[${i}].traits.${name}: an integer`);
    }
  }
}

/** What the rules say of a sheet that reads. */
function checkSheet(rulesetId, p) {
  const who = `participant \`${p.id}\``;
  // Abilities are arcana's (§2), traits pbta's (§4): another ruleset's
  // sheet has none to give.
  const [name] = rulesetId.split('@');
  for (const [key, owner] of [['abilities', 'arcana-2d10'], ['traits', 'pbta-2d6']]) {
    if (isObject(p[key]) && Object.keys(p[key]).length > 0 && name !== owner) {
      reject('SHEET_OF_ANOTHER_RULESET', `${who}: ${key} belong to sheets of ${owner}, not ${rulesetId}`);
    }
  }
  for (const [ability, fields] of Object.entries(p.abilities ?? {})) {
    const where = `${who}, ability «${ability}»`;
    for (const key of ['magical', 'min_points']) {
      if (fields[key] !== undefined && fields[key] !== null && rulesetId === 'arcana-2d10@1') {
        reject('FIELD_NOT_IN_VERSION', `${where}: \`${key}\` is not part of arcana-2d10@1's sheets (arcana-2d10@2 has it)`);
      }
    }
    const min = fields.min_points;
    if (min !== undefined && min !== null && (min < 1 || min > 12)) reject('MIN_POINTS_OUT_OF_RANGE', `${where}: min_points ${min} is outside 1..=12`);
  }
  for (const trait of Object.keys(p.traits ?? {})) {
    if (!TRAITS.includes(trait)) reject('UNKNOWN_TRAIT', `${who}: unknown trait \`${trait}\`; the traits are ${TRAITS.join(', ')}`);
  }
}

/** The context a ruleset module reads: its state and the battle's log. */
function context(state) {
  return { data: state.data, entry: (at) => logFind(state.log, at) };
}

// Actions of every ruleset (docs/rules.md §5): they change no ruleset state. A
// free roll is resolved by no ruleset: its outcome is its roll, which the
// dice check re-derives; it is recorded so that disputes and rulings can
// refer to it.
const COMMON = ['ruling', 'dispute', 'roll'];

function readCommon(type, action) {
  const allowed = { ruling: ['judge', 'refers_to', 'text', 'override'], dispute: ['by', 'refers_to', 'reason'], roll: ['actor', 'expression', 'purpose'] }[type];
  for (const name of Object.keys(action)) {
    if (name !== 'type' && name !== 'note' && !allowed.includes(name)) invalid(`unknown field ${name}`);
  }
  if (type === 'roll') return { ...action };
  if (!Number.isInteger(action.refers_to) || action.refers_to < 0) invalid('refers_to: a version');
  if (type === 'ruling' && action.override !== undefined && action.override !== null && !isObject(action.override)) {
    invalid('override: an object');
  }
  return { ...action };
}

/** Reads an action: its type and its fields with their defaults. */
function read(state, action) {
  if (!isObject(action) || typeof action.type !== 'string') invalid('an action is an object with a type');
  const type = action.type;
  if (COMMON.includes(type)) return { type, a: readCommon(type, action) };
  const rules = rulesOf(state);
  if (!rules.actions.includes(type)) invalid(`${type} is not an action of ${state.ruleset}`);
  return { type, a: rules.read(type, action) };
}

function nextAt(state) {
  const last = logLast(state.log);
  return last === undefined ? 0 : last.at + 1;
}

export function resolveAction(state, action, dice, at = nextAt(state)) {
  try {
    const { type, a } = read(state, action);
    // Faces are counts of pips: anything else is no die face at all,
    // whatever the action (the rules never see it).
    const notFace = Array.isArray(dice) ? dice.findIndex((f) => !Number.isInteger(f) || f < 0) : -1;
    if (notFace >= 0) throw new DiceMismatch(`face ${dice[notFace]} at position ${notFace + 1} is not a die face`);
    const ctx = context(state);
    let outcome;
    if (type === 'roll') invalid('a free roll is resolved by no ruleset: its dice are checked, not its outcome');
    if (COMMON.includes(type)) {
      const entry = ctx.entry(a.refers_to);
      if (!entry) reject('UNKNOWN_REFERENCE', `refers_to ${a.refers_to}: not a resolved action of this battle`);
      if (type === 'ruling' && isObject(a.override)) {
        if (entry.type === 'ruling' || entry.type === 'dispute') {
          reject('OVERRIDE_NOT_ALLOWED', `a ruling cannot override the outcome of a \`${entry.type}\``);
        }
        const problem = overrideProblem(state.ruleset, entry.type, a.override);
        if (problem) reject('OVERRIDE_INVALID', `the override does not fit the outcome of \`${entry.type}\`: ${problem}`);
      }
      checkDice([], dice);
      outcome = type === 'dispute'
        ? { result: 'disputed', refers_to: a.refers_to }
        : { result: 'ruling', refers_to: a.refers_to, overridden: isObject(a.override) };
    } else {
      const rules = rulesOf(state);
      // A scratch copy: the modules read it, nothing here writes it.
      const sides = rules.need(ctx, type, a);
      checkDice(sides, dice);
      outcome = rules.resolve(ctx, type, a, dice);
    }
    return { outcome, state: record(state, type, a, outcome, at) };
  } catch (e) {
    if (e instanceof RulesRejection) return { rejected: e.message, reason: e.reason };
    if (e instanceof DiceMismatch || e instanceof RulesInputError) return { error: e.message, reason: e.reason };
    throw e;
  }
}

/** The state after `outcome` of `action`, recorded as `at`. */
function record(state, type, a, outcome, at) {
  const rules = rulesOf(state);
  const last = logLast(state.log);
  if (!Number.isInteger(at) || (last !== undefined && at <= last.at)) invalid(`at ${at}: each action comes after the last (${last?.at})`);
  const entry = { at, type, action: a, outcome, effective: outcome };
  let log = logAppend(state.log, entry);
  let data = copy(state.data);
  if (type === 'ruling' && isObject(a.override)) {
    // docs/rules.md §5.1: a ruling never changes an earlier event; replay lays
    // its override over the referred outcome, and the state follows.
    const entries = logEntries(log).map((e) => (e.at === a.refers_to ? { ...e, effective: { ...e.effective, ...a.override } } : e));
    log = makeLog(entries, entries.length);
    data = rules.init(copy(state.participants));
    for (const e of entries) {
      if (!COMMON.includes(e.type)) rules.apply(data, e.type, e.action, e.effective, e.at);
    }
  } else if (!COMMON.includes(type)) {
    rules.apply(data, type, a, outcome, at);
  }
  return Object.freeze({ ...state, data, log });
}

export function recordAction(state, action, outcome, at = nextAt(state)) {
  const { type, a } = read(state, action);
  return record(state, type, a, outcome, at);
}

/** Plays a script of `battlelog rules play`'s format. */
export function playScript(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
  if (lines.length === 0 || !isObject(lines[0].open)) throw new RulesInputError('the first line opens the battle');
  let state = openBattle(lines[0].open.ruleset, lines[0].open.participants);
  return lines.slice(1).map((line, index) => {
    const r = resolveAction(state, line.action, line.dice ?? [], index);
    if ('outcome' in r) {
      state = r.state;
      return { outcome: r.outcome };
    }
    return 'rejected' in r ? { rejected: r.rejected, reason: r.reason } : { error: r.error, reason: r.reason };
  });
}

/** Deep equality of JSON values (key order ignored). */
export function sameJson(a, b) {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJson(a[k], b[k]));
  }
  return false;
}

/** The first field where two outcomes differ, as a sentence. */
function difference(expected, recorded) {
  if (!isObject(recorded)) return 'the recorded outcome is not an object';
  const names = [...new Set([...Object.keys(expected), ...Object.keys(recorded)])];
  for (const name of names) {
    const has = (o) => Object.prototype.hasOwnProperty.call(o, name);
    if (!has(recorded)) return `outcome field ${name}: the rules give ${JSON.stringify(expected[name])}, the record has none`;
    if (!has(expected)) return `outcome field ${name}: recorded ${JSON.stringify(recorded[name])}, the rules give none`;
    if (!sameJson(expected[name], recorded[name])) {
      return `outcome field ${name}: recorded ${JSON.stringify(recorded[name])}, the rules give ${JSON.stringify(expected[name])}`;
    }
  }
  return 'the outcomes differ';
}

const eventType = (line) => line.event?.type ?? line.event_type;

export function checkOutcomes(lines) {
  const results = [];
  const rolls = new Map();
  let state = null;
  const bad = (version, reason, problem, expected = null, recorded = null) =>
    results.push({ version, ok: false, expected, recorded, problem, reason });
  for (const line of lines) {
    if (!line || typeof line !== 'object' || !('version' in line)) continue;
    const { version, event } = line;
    const type = eventType(line);
    if (type === 'BattleOpened') {
      try {
        state = openBattle(event.ruleset, event.participants);
      } catch (e) {
        bad(version, 'OPEN_REJECTED', `the battle does not open under the rules: ${e.message}`);
      }
    } else if (type === 'DiceRolled') {
      rolls.set(String(event.nonce), event);
    } else if (type === 'ActionResolved') {
      if (!state) {
        bad(version, 'NOT_OPENED', 'an action before the battle was opened', null, event.outcome);
        continue;
      }
      state = checkAction(state, version, event, rolls, results, bad);
    } else if (type === 'DisputeRaised' || type === 'JudgeRuling') {
      if (!state) continue;
      const action = type === 'DisputeRaised'
        ? { type: 'dispute', by: event.by, refers_to: Number(event.refers_to), reason: event.reason }
        : { type: 'ruling', judge: event.judge, refers_to: Number(event.refers_to), text: event.text, override: event.override ?? null };
      const r = resolveAction(state, action, [], version);
      if ('outcome' in r) state = r.state;
      else bad(version, type === 'DisputeRaised' ? 'DISPUTE_REJECTED' : 'RULING_REJECTED', `the rules refuse this ${action.type}: ${r.rejected ?? r.error}`);
    }
  }
  return results;
}

function checkAction(state, version, event, rolls, results, bad) {
  const recorded = event.outcome;
  const action = event.action;
  const dice = [];
  for (const nonce of event.rolls ?? []) {
    const roll = rolls.get(String(nonce));
    if (!roll) {
      bad(version, 'ROLL_MISSING', `the action names roll ${nonce}, which is not in the log`, null, recorded);
      return goOn(state, action, recorded, version);
    }
    dice.push(...(roll.dice ?? []));
  }
  if (action?.type === 'roll') {
    // A free roll (docs/rules.md §5.2) is resolved by no ruleset: its outcome is
    // the roll itself, which the dice check re-derives.
    const roll = rolls.get(String((event.rolls ?? [])[0]));
    if (!roll || (event.rolls ?? []).length !== 1) {
      bad(version, 'ROLL_MISSING', 'a free roll names exactly one roll of the log', null, recorded);
      return goOn(state, action, recorded, version);
    }
    const expected = { dice: roll.dice, total: roll.total };
    if (roll.error) expected.error = roll.error;
    const ok = sameJson(expected, recorded);
    results.push({ version, ok, expected, recorded, problem: ok ? null : difference(expected, recorded), reason: ok ? null : 'FREE_ROLL_DIFFERS' });
    return goOn(state, action, recorded, version);
  }
  const faces = dice.map((d) => Number(d.value));
  let r;
  try {
    r = resolveAction(state, action, faces, version);
  } catch (e) {
    r = { error: e.message, reason: 'INVALID_ACTION' };
  }
  if ('rejected' in r) {
    bad(version, 'REJECTED', `the rules forbid this action: ${r.rejected}`, null, recorded);
    return goOn(state, action, recorded, version);
  }
  if ('error' in r) {
    bad(version, r.reason === 'DICE_MISMATCH' ? 'DICE_MISMATCH' : 'INVALID_ACTION', `the action's dice or fields do not fit the rules: ${r.error}`, null, recorded);
    return goOn(state, action, recorded, version);
  }
  const wanted = rollsNeeded(state, action);
  const used = (event.rolls ?? []).map((nonce) => rolls.get(String(nonce)).expression);
  const wrongSides = dice.findIndex((d, i) => Number(d.sides) !== (diceNeeded(state, action) ?? [])[i]);
  if (!sameJson(used, wanted) || wrongSides >= 0) {
    const what = !sameJson(used, wanted) ? `the action's rolls are [${used.join(', ')}], the rules ask for [${wanted.join(', ')}]`
      : `die ${wrongSides + 1} of the action's rolls is a d${dice[wrongSides].sides}, the rules ask for a d${diceNeeded(state, action)[wrongSides]}`;
    bad(version, 'DICE_MISMATCH', what, r.outcome, recorded);
    return goOn(state, action, recorded, version);
  }
  if (sameJson(r.outcome, recorded)) {
    results.push({ version, ok: true, expected: r.outcome, recorded, problem: null, reason: null });
    return r.state;
  }
  bad(version, 'OUTCOME_DIFFERS', difference(r.outcome, recorded), r.outcome, recorded);
  return goOn(state, action, recorded, version);
}

/** The rolls an action asks for, as dice expressions in draw order: one
 * roll of all its dice where docs/rules.md rolls them as one ("Dice: 2d10",
 * "Dice: 2d6"), else one roll per die ("one d6 power die; then one d6
 * condition die for each condition"; "the attacker's d6, then the
 * defender's"). Empty when the rules refuse the action. */
export function rollsNeeded(state, action) {
  const sides = diceNeeded(state, action) ?? [];
  if (sides.length === 0) return [];
  if (rulesOf(state).oneRoll) return [`${sides.length}d${sides[0]}`];
  return sides.map((s) => `1d${s}`);
}

/** The sides of the dice an action needs now, in draw order (null when
 * the rules refuse it or it is no action of the ruleset). */
export function diceNeeded(state, action) {
  try {
    const { type, a } = read(state, action);
    if (COMMON.includes(type)) return [];
    return rulesOf(state).need(context(state), type, a);
  } catch {
    return null;
  }
}

/** The audit goes on from what was recorded: one bad action, one entry. */
function goOn(state, action, recorded, version) {
  try {
    return recordAction(state, action, recorded ?? {}, version);
  } catch {
    return state;
  }
}
