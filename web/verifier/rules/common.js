// Shared helpers of the rules engine: the rejection type, exact fractions
// and rounding as docs/rules.md's conventions define them ("Fractions are exact,
// never floats. `round` means round half up on the exact rational value").
// No dependencies and no Node-only APIs: this runs in a page and a Worker.

/** The rules forbid an action (docs/rules.md: "rejected: no dice are drawn,
 * nothing is journaled, the caller gets a clear error naming the rule").
 * `reason` is a stable code, `message` the English sentence. */
export class RulesRejection extends Error {
  constructor(reason, message) {
    super(message);
    this.name = 'RulesRejection';
    this.reason = reason;
  }
}

/** The dice given do not fit what the action needs (count or a face out
 * of range): not a rules refusal, a mismatch of input. */
export class DiceMismatch extends Error {
  constructor(message) {
    super(message);
    this.name = 'DiceMismatch';
    this.reason = 'DICE_MISMATCH';
  }
}

/** The input is not an action of the ruleset at all (unknown field, wrong
 * type): what the Rust reader refuses before the rules see it. */
export class RulesInputError extends Error {
  constructor(message) {
    super(message);
    this.name = 'RulesInputError';
    this.reason = 'INVALID_INPUT';
  }
}

export function reject(reason, message) {
  throw new RulesRejection(reason, message);
}

/** docs/rules.md's participants: an action's actor (or target, or side) must
 * be one of the battle's sheets. `field` names the field in the message. */
export function participantOf(ids, field, id) {
  if (!Object.prototype.hasOwnProperty.call(ids, id)) {
    reject('UNKNOWN_PARTICIPANT', `${field} \`${id}\` is not a participant of this battle`);
  }
  return ids[id];
}

export function invalid(message) {
  throw new RulesInputError(message);
}

/** round(num/den) half up, for non-negative integers (exact: integers). */
export function roundHalfUp(num, den) {
  return Math.floor((2 * num + den) / (2 * den));
}

/** A fraction [num, den] reduced, written as docs/rules.md writes multipliers
 * ("0", "1/3", "2", "4/5"). */
export function fractionText([num, den]) {
  if (num === 0) return '0';
  const g = gcd(num, den);
  const [n, d] = [num / g, den / g];
  return d === 1 ? String(n) : `${n}/${d}`;
}

function gcd(a, b) {
  while (b) [a, b] = [b, a % b];
  return Math.abs(a);
}

export const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
export const isInt = (v) => Number.isInteger(v);

/** Reads an action's fields: unknown ones are refused (the schemas are
 * closed), missing optional ones take their default. `spec` maps a field
 * name to [kind, default] where kind is one of: string, bool, int, uint,
 * uint?, string?, strings, any; a default of `REQUIRED` makes it required. */
export const REQUIRED = Symbol('required');
export function fields(action, spec) {
  if (!isObject(action)) invalid('an action is a JSON object');
  const out = {};
  for (const name of Object.keys(action)) {
    if (name === 'type' || name === 'note') continue;
    if (!(name in spec)) invalid(`unknown field ${name}`);
  }
  for (const [name, [kind, dflt]] of Object.entries(spec)) {
    const present = Object.prototype.hasOwnProperty.call(action, name);
    let value = action[name];
    if (!present || (value === null && kind.endsWith('?'))) {
      if (dflt === REQUIRED) invalid(`missing field ${name}`);
      out[name] = present ? null : dflt;
      continue;
    }
    if (!checkKind(kind, value)) invalid(`field ${name}: expected ${kind}`);
    out[name] = value;
  }
  return out;
}

function checkKind(kind, v) {
  switch (kind.replace(/\?$/, '')) {
    case 'string': return typeof v === 'string';
    case 'bool': return typeof v === 'boolean';
    case 'int': return isInt(v);
    case 'uint': return isInt(v) && v >= 0;
    case 'strings': return Array.isArray(v) && v.every((s) => typeof s === 'string');
    case 'any': return true;
    default: return false;
  }
}

/** The faces as numbers in draw order, each checked against the sides the
 * action needs; a wrong count or a face out of range is a DiceMismatch. */
export function checkDice(sides, dice) {
  if (!Array.isArray(dice)) throw new DiceMismatch('dice must be a list of faces');
  if (dice.length !== sides.length) {
    throw new DiceMismatch(`the action needs ${sides.length} dice, ${dice.length} given`);
  }
  dice.forEach((face, i) => {
    if (!isInt(face) || face < 1 || face > sides[i]) {
      throw new DiceMismatch(`die ${i + 1} is a d${sides[i]}: face ${JSON.stringify(face)} is out of range`);
    }
  });
}

/** A deep copy of plain JSON data. */
export function copy(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
