// The fields an outcome may carry, per ruleset version and action type, as
// docs/rules.md names them ("Outcome fields: …"): what a judge's override may
// lay over an outcome (docs/rules.md §5.1: the result must still be an outcome
// of the referred action under the battle's ruleset version).
import { isInt, isObject } from './common.js';

const enumOf = (...values) => (v) => values.includes(v);
const uint = (v) => isInt(v) && v >= 0;
const int = (v) => isInt(v);
const bool = (v) => typeof v === 'boolean';
const string = (v) => typeof v === 'string';
// docs/rules.md writes multipliers as exact fractions: `0`, `1/3`, `2`.
const fraction = (v) => typeof v === 'string' && /^[0-9]+(\/[0-9]*[1-9][0-9]*)?$/.test(v);
const strings = (v) => Array.isArray(v) && v.every(string);

const TIER = enumOf('weak', 'medium', 'strong', 'miss', 'none');
const ARCANA_RESULT = enumOf('critical_success', 'success', 'failure', 'ordinary_failure', 'critical_failure');

// A field is [check, options]: `optional` when docs/rules.md has it only on
// some outcomes (a null then stands for "absent"), `versions` when only
// those versions of the ruleset have it (and always have it), `nullable`
// when null is one of its values (then even a null is a value, which the
// other version cannot carry).
const opt = (check, more = {}) => [check, { optional: true, ...more }];
const req = (check, more = {}) => [check, more];

/** The outcome fields of each action type of a ruleset (both versions). */
function shapes(name) {
  switch (name) {
    case 'pokemon-d6': return {
      attack: {
        result: req(enumOf('miss', 'hit', 'crit', 'failed', 'self_hit', 'flinched', 'charging')), multiplier: opt(fraction),
        hits: opt(uint), damage: opt(uint), effect_applied: opt(string), interrupts_target: opt(bool), breaks_charge: opt(bool),
      },
      status_move: {
        result: req(enumOf('success', 'failed', 'self_hit', 'flinched')), turns: req(uint), breaks_charge: opt(bool, { versions: [2] }),
      },
      dodge: {
        result: opt(enumOf('rolled', 'not_needed', 'flinched'), { versions: [2] }), reduction_percent: req(uint), counted: req(bool),
        dodges_left: req(uint), damage_after: opt(uint),
      },
      metronome: { picked: req(string) },
      pass: { result: req(enumOf('pass')) },
    };
    case 'arcana-2d10': {
      const cast = { result: req(ARCANA_RESULT), sum: req(uint), total_skill: req(int), concentration_broken: req(bool) };
      return { cast, defend: { ...cast, attack_lands: req(bool) }, start_episode: { result: req(enumOf('episode_started')) } };
    }
    case 'berserk': return {
      strike: {
        fight: req(bool), attacker_tier: req(TIER), defender_tier: req(TIER), attacker_damage: opt(uint), defender_damage: opt(uint),
        diff: opt(int), exchange_avoided: req(bool), pending_choice: opt(enumOf('attacker', 'defender'), { versions: [2], nullable: true }),
      },
      effect: { tier: req(enumOf('x', 'y', 'z')), value: req(int) },
      exchange_choice: {
        exchange_avoided: req(bool), attacker_tier: req(TIER), defender_tier: req(TIER), diff: req(int),
        attacker_damage: opt(uint), defender_damage: opt(uint),
      },
    };
    case 'pbta-2d6': return {
      move: { result: req(enumOf('full_success', 'success_with_cost', 'miss')), total: req(int), help: req(uint), exposed: req(strings) },
    };
    default: return {};
  }
}

const ROLL = { dice: req((v) => Array.isArray(v) && v.every(isObject)), total: req(int), error: opt(string) };

/** Why `override` cannot be laid over an outcome of `type` under
 * `rulesetId`, or null when it can: first every field must be one an
 * outcome of that action has, of the right kind; then it must fit the
 * version (a field of the other version; one this version always has,
 * set to null). */
export function overrideProblem(rulesetId, type, override) {
  const [name, v] = rulesetId.split('@');
  const fields = type === 'roll' ? ROLL : shapes(name)[type] ?? {};
  const entries = Object.entries(override);
  for (const [field, value] of entries) {
    const shape = fields[field];
    if (!shape) return `override.${field}: unknown field \`${field}\``;
    const [check, { optional }] = shape;
    if (value === null ? !optional : !check(value)) return `override.${field}: invalid value ${JSON.stringify(value)}`;
  }
  for (const [field, value] of entries) {
    const { versions, nullable: mayBeNull } = fields[field][1];
    if (!versions) continue;
    const has = versions.includes(Number(v));
    if (!has && (value !== null || mayBeNull)) return `\`${field}\` is not part of a ${rulesetId} ${type} outcome`;
    if (has && value === null && !mayBeNull) return `a ${rulesetId} ${type} outcome needs \`${field}\``;
  }
  return null;
}
