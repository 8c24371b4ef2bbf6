// berserk@1 and @2 (docs/rules.md §3 and §6.3): the Berserk card game's strike
// table. State (@2 only): the strike awaiting its exchange choice.
import { REQUIRED, fields, invalid, isObject, participantOf, reject } from './common.js';

const SIDE = {
  id: ['string', REQUIRED], strike: ['any', null], die_modifier: ['int', 0],
  avoid_exchange: ['any', undefined], fixed_roll: ['any', undefined],
};
const ATTACKER = { ...SIDE, attack_experience: ['uint', 0] };
const DEFENDER = { ...SIDE, defense_experience: ['uint', 0], closed: ['bool', false] };
const KINDS = ['simple', 'unanswerable', 'special', 'magic', 'through_row', 'shot', 'discharge', 'throw'];
const SPECS = {
  strike: { attacker: ['any', REQUIRED], defender: ['any', REQUIRED], kind: ['string', REQUIRED], own_squad: ['bool', false] },
  effect: { actor: ['string', REQUIRED], values: ['any', REQUIRED], die_modifier: ['int', 0] },
  exchange_choice: { actor: ['string', REQUIRED], against: ['uint', REQUIRED], avoid: ['any', REQUIRED] },
};

export function berserk(version) {
  const specs = version === 1 ? { strike: SPECS.strike, effect: SPECS.effect } : SPECS;
  return {
    actions: Object.keys(specs),
    init(participants) {
      const ids = {};
      for (const p of participants) ids[p.id] = true;
      return { ids, pending: null };
    },
    read(type, action) {
      const a = fields(action, specs[type]);
      if (type === 'strike') {
        if (!KINDS.includes(a.kind)) invalid(`unknown strike kind ${a.kind}`);
        a.attacker = side(a.attacker, ATTACKER, 'attacker');
        a.defender = side(a.defender, DEFENDER, 'defender');
      }
      if (type === 'effect' && !(Array.isArray(a.values) && a.values.length === 3 && a.values.every(Number.isInteger))) {
        invalid('values: three integers');
      }
      return a;
    },
    need: (ctx, type, a) => need(version, ctx, type, a),
    resolve: (ctx, type, a, faces) => resolve(version, ctx, type, a, faces),
    apply,
  };
}

function side(value, spec, name) {
  if (!isObject(value)) invalid(`${name}: an object`);
  const s = fields(value, spec);
  const okStrike = s.strike === null
    || (Array.isArray(s.strike) && s.strike.length === 3 && s.strike.every((v) => Number.isInteger(v) && v >= 0));
  if (!okStrike) invalid(`${name}.strike: three damage values`);
  if (s.avoid_exchange !== undefined && typeof s.avoid_exchange !== 'boolean') invalid(`${name}.avoid_exchange: a boolean`);
  return s;
}

const isFight = (a) => a.kind === 'simple' && !a.defender.closed && !a.own_squad;
const validRoll = (v) => Number.isInteger(v) && v >= 1 && v <= 6;

function need(version, ctx, type, a) {
  if (type === 'exchange_choice') {
    const pending = ctx.data.pending;
    if (!pending || pending.at !== a.against) {
      reject('NOT_AWAITING_CHOICE', 'against is not a strike awaiting its exchange choice');
    }
    if (a.actor !== pending.chooser) reject('NOT_THE_HIGHER_SIDE', 'only the side that rolled higher chooses');
    if (typeof a.avoid !== 'boolean') reject('AVOID_NOT_BOOLEAN', 'avoid must be true or false');
    return [];
  }
  const { attacker, defender } = a;
  if (type === 'effect') participantOf(ctx.data.ids, 'actor', a.actor);
  else {
    participantOf(ctx.data.ids, 'attacker.id', attacker.id);
    participantOf(ctx.data.ids, 'defender.id', defender.id);
  }
  if (type === 'strike' && version === 1) {
    for (const [name, s] of [['attacker', attacker], ['defender', defender]]) {
      if (s.fixed_roll !== undefined) reject('FIELD_NOT_IN_VERSION', `\`strike\` has no field \`${name}.fixed_roll\` in berserk@1`);
    }
  }
  if (version === 2 && ctx.data.pending) reject('EXCHANGE_CHOICE_PENDING', 'a strike awaits its exchange choice');
  if (type === 'effect') return [6];
  if (version === 2) {
    if (attacker.avoid_exchange !== undefined || defender.avoid_exchange !== undefined) {
      reject('AVOID_EXCHANGE_BEFORE_ROLL', '@2: avoid_exchange is chosen after the roll (exchange_choice)');
    }
    for (const s of [attacker, defender]) {
      if (s.fixed_roll !== undefined && !validRoll(s.fixed_roll)) {
        reject('FIXED_ROLL_OUT_OF_RANGE', 'fixed_roll must be an integer from 1 to 6');
      }
    }
  }
  const sides = [];
  if (attacker.fixed_roll === undefined) sides.push(6);
  if (isFight(a) && defender.fixed_roll === undefined) sides.push(6);
  return sides;
}

/** §3.1's table: [attacker tier, defender tier] by diff (and A on a tie). */
function row(diff, A) {
  if (diff === 0) return A <= 4 ? ['weak', 'miss'] : ['miss', 'weak'];
  if (diff >= 5) return ['strong', 'miss'];
  if (diff <= -5) return ['miss', 'medium'];
  return {
    1: ['weak', 'miss'], 2: ['medium', 'weak'], 3: ['medium', 'miss'], 4: ['strong', 'weak'],
    '-1': ['weak', 'miss'], '-2': ['miss', 'miss'], '-3': ['miss', 'weak'], '-4': ['weak', 'medium'],
  }[diff];
}

const TIER_INDEX = { weak: 0, medium: 1, strong: 2 };
function damage(strike, tier) {
  return tier in TIER_INDEX ? strike[TIER_INDEX[tier]] : 0;
}

/** The damage fields, present when that side gave its strike values. */
function damages(out, a, attackerTier, defenderTier) {
  if (a.attacker.strike !== null) out.attacker_damage = damage(a.attacker.strike, attackerTier);
  if (a.defender.strike !== null) out.defender_damage = damage(a.defender.strike, defenderTier);
  return out;
}

// Both sides strike on these rows; the higher side may step one row up.
const STEP = { 2: 1, 4: 3, '-4': -3 };

function resolve(version, ctx, type, a, faces) {
  if (type === 'effect') {
    const v = faces[0] + a.die_modifier;
    const tier = v <= 3 ? 'x' : v <= 5 ? 'y' : 'z';
    return { tier, value: a.values[{ x: 0, y: 1, z: 2 }[tier]] };
  }
  if (type === 'exchange_choice') {
    // §6.3.1: the final tiers are the strike's as they stand (a ruling may
    // have changed them, docs/rules.md §5.1), or the row one up when avoided.
    const p = ctx.data.pending;
    const strike = ctx.entry(p.at);
    const avoided = a.avoid && p.diff in STEP;
    const diff = avoided ? STEP[p.diff] : p.diff;
    const [at, dt] = avoided ? row(diff, null) : p.tiers;
    return damages({ exchange_avoided: a.avoid, attacker_tier: at, defender_tier: dt, diff }, strike.action, at, dt);
  }
  const dice = [...faces];
  const { attacker, defender } = a;
  const aRoll = attacker.fixed_roll ?? dice.shift();
  if (!isFight(a)) {
    const A = aRoll + attacker.die_modifier;
    const tier = A <= 3 ? 'weak' : A <= 5 ? 'medium' : 'strong';
    const out = { fight: false, attacker_tier: tier, defender_tier: 'none', diff: null, exchange_avoided: false };
    if (version === 2) out.pending_choice = null;
    return damages(out, a, tier, 'none');
  }
  const dRoll = defender.fixed_roll ?? dice.shift();
  const X = attacker.attack_experience;
  const Y = defender.defense_experience;
  const A = aRoll + attacker.die_modifier + (X > Y ? X - Y : 0);
  const D = dRoll + defender.die_modifier + (Y > X ? Y - X : 0);
  const diff = A - D;
  let [at, dt] = row(diff, A);
  let avoided = false;
  let pending = null;
  if (diff in STEP) {
    const higher = diff > 0 ? attacker : defender;
    if (version === 1) {
      if (higher.avoid_exchange === true) {
        avoided = true;
        [at, dt] = row(STEP[diff], A);
      }
    } else {
      pending = diff > 0 ? 'attacker' : 'defender';
    }
  }
  const out = { fight: true, attacker_tier: at, defender_tier: dt, diff, exchange_avoided: avoided };
  if (version === 2) out.pending_choice = pending;
  return damages(out, a, at, dt);
}

function apply(data, type, a, o, at) {
  if (type === 'strike' && o.pending_choice) {
    const chooser = o.pending_choice === 'attacker' ? a.attacker.id : a.defender.id;
    data.pending = { at, chooser, diff: o.diff, tiers: [o.attacker_tier, o.defender_tier] };
  } else if (type === 'exchange_choice') {
    data.pending = null;
  }
}
