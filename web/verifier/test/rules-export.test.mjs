// Outcomes of real exports re-resolved by the JavaScript rules
// (rules/index.js checkOutcomes): every action of the fixture exports
// (battles played by the real services: the demo's, and random battles of
// tools/rules-battle.mjs with disputes, rulings and overrides, free rolls,
// refused actions) re-resolves to its recorded
// outcome; an export whose one outcome was forged — in the hashed record
// and the readable event, the chain recomputed, as tools/tamper.mjs does —
// fails at that version and names the field; rulings' overrides reach the
// state after them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { checkOutcomes, openBattle, resolveAction, rulesetIds, RulesRejection } from '../rules/index.js';
import { base64ToBytes, decodeRecord } from '../verify.js';
import { changeOutcome, forgedOutcome } from '../tools/tamper.mjs';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
const exportFiles = fs.readdirSync(fixtures).filter((f) => f.endsWith('.jsonl')).sort();

const parse = (text) => text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
/** The events as their hashed records hold them (what a verifier trusts). */
const fromRecords = (lines) => lines.filter((l) => 'version' in l)
  .map((l) => ({ version: l.version, event: decodeRecord(base64ToBytes(l.record)).event }));
const rulesActions = (lines) => lines.filter((l) => l.event?.type === 'ActionResolved' && l.event.action.type !== 'roll');

test('the fixtures hold battles of every ruleset version, with rulings that override', () => {
  const all = exportFiles.map((f) => parse(fs.readFileSync(path.join(fixtures, f), 'utf8')));
  const rulesets = new Set(all.map((lines) => lines[0].event.ruleset));
  assert.deepEqual([...rulesets].sort(), [...rulesetIds].sort());
  const overrides = all.flat().filter((l) => l.event?.type === 'JudgeRuling' && l.event.override);
  assert.ok(overrides.length >= 2, `${overrides.length} overriding rulings`);
});

for (const file of exportFiles) {
  const text = fs.readFileSync(path.join(fixtures, file), 'utf8');

  test(`${file}: every action re-resolves to its recorded outcome`, () => {
    for (const lines of [parse(text), fromRecords(parse(text))]) {
      const results = checkOutcomes(lines);
      const actions = lines.filter((l) => (l.event?.type ?? l.event_type) === 'ActionResolved');
      assert.equal(results.length, actions.length, 'one entry per action');
      assert.deepEqual(results.filter((r) => !r.ok), []);
      assert.deepEqual(results.map((r) => r.version), actions.map((l) => l.version));
    }
  });

  if (rulesActions(parse(text)).length === 0) continue;

  test(`${file}: an outcome forged in record and event fails at its version`, async () => {
    const forged = await changeOutcome(text);
    const results = checkOutcomes(fromRecords(parse(forged.text)));
    const bad = results.filter((r) => !r.ok);
    assert.equal(bad.length, 1, JSON.stringify(bad));
    assert.equal(bad[0].version, forged.version);
    assert.equal(bad[0].reason, 'OUTCOME_DIFFERS');
    assert.match(bad[0].problem, /^outcome field [a-z_]+: recorded /);
    // The readable copy carries the same forgery.
    assert.equal(checkOutcomes(parse(forged.text)).find((r) => !r.ok)?.version, forged.version);
  });
}

test('a hit forged into a crit is named by its result field', async () => {
  const text = fs.readFileSync(path.join(fixtures, 'demo-pokemon-closed.jsonl'), 'utf8');
  const hit = rulesActions(parse(text)).find((l) => l.event.outcome.result === 'hit');
  assert.ok(hit, 'the fixture has a hit');
  const forged = await changeOutcome(text, hit.version);
  const bad = checkOutcomes(fromRecords(parse(forged.text))).filter((r) => !r.ok);
  assert.deepEqual(bad.map((r) => r.version), [hit.version]);
  assert.match(bad[0].problem, /^outcome field (result|multiplier|damage): /);
  assert.equal(bad[0].recorded.result, 'crit');
  assert.equal(bad[0].expected.result, 'hit');
});

test('forgedOutcome changes something', () => {
  assert.deepEqual(forgedOutcome({ result: 'hit', multiplier: '1', damage: 40 }), { result: 'crit', multiplier: '2', damage: 81 });
  assert.deepEqual(forgedOutcome({ result: 'success', turns: 2 }), { result: 'success', turns: 3 });
  assert.deepEqual(forgedOutcome({ counted: true }), { counted: false });
});

// A battle built by hand from docs/rules.md: the expected values come from the
// text's tables, not from the engine.
function pokemonExport(events) {
  return events.map((event, version) => ({ version, event }));
}

test('a ruling that overrides a dodge reaches the dodges counted after it', () => {
  // pokemon-d6@1 §1.3: d = 4 → 60 %, counted, 4 left; the judge rules it
  // not counted; the next dodge (d = 3 → 50 %, counted) leaves 4, not 3.
  const opened = { type: 'BattleOpened', ruleset: 'pokemon-d6@1', participants: [{ id: 'pikachu' }, { id: 'meowth' }] };
  const roll = (nonce, value) => ({ type: 'DiceRolled', nonce, expression: '1d6', dice: [{ sides: 6, value, kept: true, rerolled: false, exploded: false }], total: value });
  const dodge = { type: 'dodge', actor: 'meowth', priority: false, teleport: false };
  const lines = pokemonExport([
    opened,
    roll(0, 4),
    { type: 'ActionResolved', action: dodge, rolls: [0], outcome: { reduction_percent: 60, counted: true, dodges_left: 4 } },
    { type: 'JudgeRuling', judge: 'anna', refers_to: 2, text: 'the dodge does not count', override: { counted: false } },
    roll(1, 3),
    { type: 'ActionResolved', action: dodge, rolls: [1], outcome: { reduction_percent: 50, counted: true, dodges_left: 4 } },
  ]);
  assert.deepEqual(checkOutcomes(lines).map((r) => [r.version, r.ok]), [[2, true], [5, true]]);
  // Without the ruling the same record is wrong: 3 dodges are left.
  const without = lines.filter((l) => l.version !== 3);
  const bad = checkOutcomes(without).filter((r) => !r.ok);
  assert.deepEqual(bad.map((r) => r.version), [5]);
  assert.match(bad[0].problem, /dodges_left: recorded 4, the rules give 3/);
});

test('an action the rules forbid, dice of the wrong sides and a missing roll are each one failing entry', () => {
  const opened = { type: 'BattleOpened', ruleset: 'arcana-2d10@1', participants: [{ id: 'mage', abilities: { Shield: { per_episode: 1 } } }] };
  const die = (sides, value) => ({ sides, value, kept: true, rerolled: false, exploded: false });
  const cast = { type: 'cast', actor: 'mage', ability: 'Shield', skill_points: 5, specialization_matches: true, artifact_bonus: 0, berserk_bonus: 0, aux_bonus: 0, post: 'p1' };
  // §2.1: 5 points + 2 = 7; 3 + 4 = 7 ≤ 7 is a success.
  const success = { result: 'success', sum: 7, total_skill: 7, concentration_broken: false };
  const lines = pokemonExport([
    opened,
    { type: 'DiceRolled', nonce: 0, expression: '2d10', dice: [die(10, 3), die(10, 4)], total: 7 },
    { type: 'ActionResolved', action: cast, rolls: [0], outcome: success },
    { type: 'DiceRolled', nonce: 1, expression: '2d10', dice: [die(10, 3), die(10, 4)], total: 7 },
    // The per-episode limit of 1 is used up.
    { type: 'ActionResolved', action: cast, rolls: [1], outcome: success },
    { type: 'DiceRolled', nonce: 2, expression: '2d6', dice: [die(6, 3), die(6, 4)], total: 7 },
    { type: 'ActionResolved', action: { ...cast, ability: null }, rolls: [2], outcome: success },
    { type: 'ActionResolved', action: { ...cast, ability: null }, rolls: [9], outcome: success },
    // Two rolls of one d10 each: the right faces, not the roll §2.1 asks for.
    { type: 'DiceRolled', nonce: 3, expression: '1d10', dice: [die(10, 3)], total: 3 },
    { type: 'DiceRolled', nonce: 4, expression: '1d10', dice: [die(10, 4)], total: 4 },
    { type: 'ActionResolved', action: { ...cast, ability: null }, rolls: [3, 4], outcome: success },
  ]);
  const results = checkOutcomes(lines);
  assert.deepEqual(results.map((r) => [r.version, r.ok, r.reason]), [
    [2, true, null], [4, false, 'REJECTED'], [6, false, 'DICE_MISMATCH'], [7, false, 'ROLL_MISSING'], [10, false, 'DICE_MISMATCH'],
  ]);
  assert.match(results[4].problem, /rolls are \[1d10, 1d10\], the rules ask for \[2d10\]/);
  assert.match(results[1].problem, /used up/);
});

test('a ruling whose override is no outcome of the action is refused, and changes nothing', () => {
  // pokemon-d6@1 §1.3: d = 4 → 60 %, counted, 4 left; then d = 3 → 3 left.
  const opened = { type: 'BattleOpened', ruleset: 'pokemon-d6@1', participants: [{ id: 'meowth' }] };
  const roll = (nonce, value) => ({ type: 'DiceRolled', nonce, expression: '1d6', dice: [{ sides: 6, value, kept: true, rerolled: false, exploded: false }], total: value });
  const dodge = { type: 'dodge', actor: 'meowth', priority: false, teleport: false };
  const lines = pokemonExport([
    opened,
    roll(0, 4),
    { type: 'ActionResolved', action: dodge, rolls: [0], outcome: { reduction_percent: 60, counted: true, dodges_left: 4 } },
    // `counted` is a boolean; `result` is not part of a @1 dodge (§6.1.3 adds it in @2).
    { type: 'JudgeRuling', judge: 'anna', refers_to: 2, text: 'no', override: { counted: 'no' } },
    { type: 'JudgeRuling', judge: 'anna', refers_to: 2, text: 'no', override: { result: 'rolled' } },
    roll(1, 3),
    { type: 'ActionResolved', action: dodge, rolls: [1], outcome: { reduction_percent: 50, counted: true, dodges_left: 3 } },
  ]);
  const results = checkOutcomes(lines);
  assert.deepEqual(results.map((r) => [r.version, r.ok, r.reason]), [
    [2, true, null], [3, false, 'RULING_REJECTED'], [4, false, 'RULING_REJECTED'], [6, true, null],
  ]);
  assert.match(results[2].problem, /`result` is not part of a pokemon-d6@1 dodge outcome/);
});

test('a dispute may refer to a free roll', () => {
  const opened = { type: 'BattleOpened', ruleset: 'pbta-2d6@2', participants: [{ id: 'ash' }] };
  const dice = [{ sides: 20, value: 5, kept: true, rerolled: false, exploded: false }];
  const lines = pokemonExport([
    opened,
    { type: 'DiceRolled', nonce: 0, dice, total: 7 },
    { type: 'ActionResolved', action: { type: 'roll', actor: 'ash', expression: '1d20+2', purpose: 'luck' }, rolls: [0], outcome: { dice, total: 7 } },
    { type: 'DisputeRaised', by: 'misty', refers_to: 2, reason: 'loaded' },
  ]);
  assert.deepEqual(checkOutcomes(lines).map((r) => [r.version, r.ok]), [[2, true]]);
  // A free roll whose outcome is not its roll fails.
  lines[2].event.outcome = { dice, total: 8 };
  assert.deepEqual(checkOutcomes(lines).map((r) => [r.version, r.ok, r.reason]), [[2, false, 'FREE_ROLL_DIFFERS']]);
});

test('the API: rejections, errors, and a state never changed in place', () => {
  assert.throws(() => openBattle('chess@1', []), (e) => e instanceof RulesRejection && e.reason === 'UNKNOWN_RULESET');
  const refused = (ruleset, sheets) => {
    try {
      openBattle(ruleset, sheets);
    } catch (e) {
      return e.reason;
    }
    return 'opened';
  };
  assert.equal(refused('pokemon-d6@1', []), 'NO_PARTICIPANTS');
  assert.equal(refused('pokemon-d6@1', [{ id: 'a' }, { id: 'a' }]), 'DUPLICATE_PARTICIPANT');
  // §6.2.1: min_points is 1..12, and @2's; §4: six traits, on pbta's sheets.
  assert.equal(refused('arcana-2d10@2', [{ id: 'a', abilities: { x: { min_points: 13 } } }]), 'MIN_POINTS_OUT_OF_RANGE');
  assert.equal(refused('arcana-2d10@1', [{ id: 'a', abilities: { x: { min_points: 3 } } }]), 'FIELD_NOT_IN_VERSION');
  assert.equal(refused('pbta-2d6@1', [{ id: 'a', traits: { luck: 1 } }]), 'UNKNOWN_TRAIT');
  assert.equal(refused('berserk@1', [{ id: 'a', traits: { wits: 1 } }]), 'SHEET_OF_ANOTHER_RULESET');
  assert.equal(refused('pbta-2d6@1', [{ id: 'a', traits: { wits: 'x' } }]), 'INVALID_INPUT');
  assert.equal(refused('arcana-2d10@2', [{ id: 'a', abilities: { x: { min_points: 12, magical: false } } }]), 'opened');
  const state = openBattle('pbta-2d6@1', [{ id: 'ash', traits: { wits: 2 } }]);
  const snapshot = JSON.stringify(state);
  // §4.1: 4 + 3 + wits 2 + help 1 = 10 → full success.
  const r = resolveAction(state, { type: 'move', actor: 'ash', trait: 'wits', helpers: ['misty'] }, [4, 3]);
  assert.deepEqual(r.outcome, { result: 'full_success', total: 10, help: 1, exposed: ['misty'] });
  assert.equal(JSON.stringify(state), snapshot);
  assert.equal(resolveAction(state, { type: 'move', actor: 'ash', trait: 'luck' }, [4, 3]).reason, 'UNKNOWN_TRAIT');
  assert.equal(resolveAction(state, { type: 'move', actor: 'ash', trait: 'wits' }, [4]).reason, 'DICE_MISMATCH');
  assert.equal(resolveAction(state, { type: 'move', actor: 'ash', trait: 'wits' }, [4, 7]).reason, 'DICE_MISMATCH');
  assert.equal(resolveAction(state, { type: 'attack', actor: 'ash' }, []).reason, 'INVALID_INPUT');
});
