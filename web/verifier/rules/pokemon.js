// pokemon-d6@1 and @2 (docs/rules.md §1 and §6.1): forum Pokémon battles.
// State per Pokémon: dodges_used, statuses (name → turns left), charging
// (the two-turn move being prepared, or null), flinched.
import { REQUIRED, fields, fractionText, invalid, participantOf, reject, roundHalfUp } from './common.js';

const MAX_DODGES = 5;
// §1.1 step 3: the condition dice, in this fixed order.
const CONDITIONS = ['paralysis', 'infatuation', 'confusion'];

const SPECS = {
  attack: {
    actor: ['string', REQUIRED], target: ['string', REQUIRED], move: ['string', REQUIRED],
    power: ['uint?', null], effect: ['string?', null],
    interrupt: ['bool', false], multi_hit: ['bool', false], two_turn: ['bool', false],
    variable_power: ['bool', false], never_miss: ['bool', false], high_crit: ['bool', false],
    priority: ['bool', false], prefer: ['string', 'crit'],
  },
  status_move: {
    actor: ['string', REQUIRED], target: ['string', REQUIRED], move: ['string', REQUIRED],
    status: ['string', REQUIRED],
  },
  dodge: {
    actor: ['string', REQUIRED], priority: ['bool', false], teleport: ['bool', false],
    incoming_damage: ['uint?', null], against: ['uint?', null],
  },
  metronome: { actor: ['string', REQUIRED], moves: ['strings', REQUIRED] },
  pass: { actor: ['string', REQUIRED] },
};

export function pokemon(version) {
  return {
    actions: Object.keys(SPECS),
    init(participants) {
      const mons = {};
      for (const p of participants) {
        mons[p.id] = { dodges_used: 0, statuses: {}, charging: null, flinched: false };
      }
      return { mons, answered: [] };
    },
    read(type, action) {
      const a = fields(action, SPECS[type]);
      if (type === 'attack' && a.prefer !== 'crit' && a.prefer !== 'effect') invalid('prefer must be crit or effect');
      return a;
    },
    need: (ctx, type, a) => need(version, ctx, type, a),
    resolve: (ctx, type, a, faces) => resolve(version, ctx, type, a, faces),
    apply: (data, type, a, outcome, at) => apply(version, data, type, a, outcome, at),
  };
}

function mon(data, id, field = 'actor') {
  return participantOf(data.mons, field, id);
}

/** The condition dice the actor rolls (§1.1 step 3), in order. */
function conditions(m) {
  return CONDITIONS.filter((name) => (m.statuses[name] ?? 0) > 0);
}

/** §6.1.3: the attack a dodge answers, or why there is none to answer. */
function answeredAttack(ctx, a) {
  const entry = a.against === null ? undefined : ctx.entry(a.against);
  if (!entry || entry.type !== 'attack') reject('DODGE_NOT_AGAINST_AN_ATTACK', 'against is not a resolved attack');
  if (entry.action.target !== a.actor) reject('DODGE_AGAINST_ANOTHER', 'against is an attack on another Pokémon');
  if (!['hit', 'crit', 'miss'].includes(entry.effective.result)) {
    reject('DODGE_AGAINST_NO_HIT', 'against is an attack whose result is not hit, crit or miss');
  }
  if (ctx.data.answered.includes(a.against)) reject('ATTACK_ALREADY_DODGED', 'that attack was already answered by a dodge');
  return entry;
}

function need(version, ctx, type, a) {
  const data = ctx.data;
  const actor = mon(data, a.actor);
  if (type === 'dodge' && version === 1 && a.against !== null) {
    reject('FIELD_NOT_IN_VERSION', '`dodge` has no field `against` in pokemon-d6@1');
  }
  switch (type) {
    case 'attack': {
      mon(data, a.target, 'target');
      if (a.multi_hit && a.variable_power) {
        reject('MULTI_HIT_AND_VARIABLE_POWER', 'multi_hit and variable_power cannot be combined in one attack');
      }
      if (actor.flinched) return [];
      if (a.two_turn && actor.charging !== a.move) return [];
      return [6, ...conditions(actor).map(() => 6)];
    }
    case 'status_move':
      mon(data, a.target, 'target');
      if (actor.flinched) return [];
      return [6, ...conditions(actor).map(() => 6)];
    case 'dodge': {
      if (version === 1) {
        if (actor.dodges_used >= MAX_DODGES) {
          reject('NO_DODGES_LEFT', `${a.actor} has already used all ${MAX_DODGES} dodges of this battle`);
        }
        return [6];
      }
      const attack = answeredAttack(ctx, a);
      if (attack.effective.result === 'miss') return [];
      if (actor.dodges_used >= MAX_DODGES) reject('NO_DODGES_LEFT', 'no dodges left');
      if (a.teleport && actor.flinched) return [];
      return [6];
    }
    case 'metronome':
      if (a.moves.length === 0) reject('METRONOME_NO_MOVES', 'metronome needs at least one move');
      return [a.moves.length];
    case 'pass':
      return [];
  }
}

/** §1.1 step 4 (and §6.1.1): result, multiplier [num, den], hits and
 * whether the move's effect may apply, from the power die alone. */
function powerRow(version, a, p) {
  // docs/rules.md does not say what `never_miss` does together with
  // `variable_power` or (@1) `multi_hit`, whose own tables make p = 1 a
  // miss. Read here as "never misses: p = 1 is the weakest hit of the table
  // in use" (the general table's 1/3 is its p = 2 row), which is also what
  // the Rust rules do (found by the differential run; reported so that
  // docs/rules.md can say it).
  const q = p === 1 && a.never_miss ? 2 : p;
  if (a.variable_power) {
    if (q === 1) return { result: 'miss', mult: [0, 1] };
    return { result: 'hit', mult: [q - 1, 5], effect: p === 5 };
  }
  if (a.multi_hit && version === 1) {
    if (q === 1) return { result: 'miss', mult: [0, 1] };
    return { result: 'hit', mult: [1, 1], hits: q - 1, effect: p === 5 };
  }
  let row;
  switch (p) {
    case 1: row = a.never_miss ? { result: 'hit', mult: [1, 3] } : { result: 'miss', mult: [0, 1] }; break;
    case 2: row = { result: 'hit', mult: [1, 3] }; break;
    case 3: row = { result: 'hit', mult: [2, 3] }; break;
    case 4: row = { result: 'hit', mult: [1, 1] }; break;
    case 5:
      if (a.high_crit && !(a.effect !== null && a.prefer === 'effect')) row = { result: 'crit', mult: [2, 1] };
      else row = { result: 'hit', mult: [1, 1], effect: true };
      break;
    default: row = { result: 'crit', mult: [2, 1] };
  }
  if (a.multi_hit && row.result !== 'miss') row.hits = Math.max(1, p - 1);
  return row;
}

/** The condition dice's verdict: failed, confused into itself, or fine. */
function conditionVerdict(actor, dice) {
  let failed = false;
  let selfHit = false;
  conditions(actor).forEach((name, i) => {
    const die = dice[i];
    if (name === 'paralysis' && die <= 2) failed = true;
    if (name === 'infatuation' && die % 2 === 1) failed = true;
    if (name === 'confusion' && die % 2 === 1) selfHit = true;
  });
  return failed ? 'failed' : selfHit;
}

function resolve(version, ctx, type, a, faces) {
  const data = ctx.data;
  const actor = mon(data, a.actor);
  switch (type) {
    case 'attack': {
      if (actor.flinched) return { result: 'flinched' };
      if (a.two_turn && actor.charging !== a.move) return { result: 'charging' };
      const [p, ...cond] = faces;
      const verdict = conditionVerdict(actor, cond);
      if (verdict === 'failed') return { result: 'failed' };
      const row = powerRow(version, a, p);
      const out = { result: row.result, multiplier: fractionText(row.mult) };
      const hits = row.hits ?? 1;
      if (row.result !== 'miss' && row.hits !== undefined) out.hits = row.hits;
      if (a.power !== null) out.damage = roundHalfUp(a.power * row.mult[0] * hits, row.mult[1]);
      if (row.result === 'miss') return out;
      if (verdict === true) {
        out.result = 'self_hit';
        return out;
      }
      const target = data.mons[a.target];
      const effect = row.effect && a.effect !== null ? a.effect : null;
      out.effect_applied = effect;
      out.interrupts_target = (a.interrupt && p > 1) || (version === 2 && effect === 'flinch');
      out.breaks_charge = p === 6 && target.charging !== null;
      return out;
    }
    case 'status_move': {
      const tail = version === 2 ? { breaks_charge: false } : {};
      if (actor.flinched) return { result: 'flinched', turns: 0, ...tail };
      const [p, ...cond] = faces;
      const verdict = conditionVerdict(actor, cond);
      if (verdict === 'failed' || p <= 2) return { result: 'failed', turns: 0, ...tail };
      if (verdict === true) return { result: 'self_hit', turns: p - 2, ...tail };
      if (version === 2) tail.breaks_charge = p === 6 && data.mons[a.target].charging !== null;
      return { result: 'success', turns: p - 2, ...tail };
    }
    case 'dodge': {
      let incoming = a.incoming_damage;
      let priority = a.priority;
      const out = {};
      if (version === 2) {
        const attack = ctx.entry(a.against);
        incoming = attack.effective.damage ?? null;
        priority = attack.action.priority === true;
        const left = MAX_DODGES - actor.dodges_used;
        if (attack.effective.result === 'miss') {
          return withDamage({ result: 'not_needed', reduction_percent: 100, counted: false, dodges_left: left }, incoming, 100);
        }
        if (a.teleport && actor.flinched) {
          return withDamage({ result: 'flinched', reduction_percent: 0, counted: true, dodges_left: left - 1 }, incoming, 0);
        }
        out.result = 'rolled';
      }
      const e = Math.max(1, priority ? faces[0] - 1 : faces[0]);
      const reduction = [0, 0, 5, 50, 60, 100, 100][e];
      const counted = e !== 6;
      out.reduction_percent = reduction;
      out.counted = counted;
      out.dodges_left = MAX_DODGES - actor.dodges_used - (counted ? 1 : 0);
      return withDamage(out, incoming, reduction);
    }
    case 'metronome':
      return { picked: a.moves[faces[0] - 1] };
    case 'pass':
      return { result: 'pass' };
  }
}

function withDamage(out, incoming, reduction) {
  if (incoming !== null && incoming !== undefined) out.damage_after = roundHalfUp(incoming * (100 - reduction), 100);
  return out;
}

/** §1.1 step 7: the end of the actor's turn. */
function tick(m) {
  for (const name of Object.keys(m.statuses)) {
    m.statuses[name] -= 1;
    if (m.statuses[name] <= 0) delete m.statuses[name];
  }
}

/** What an outcome leaves behind: the state follows the (effective)
 * outcome, so that a judge's override reaches everything after it. */
function apply(version, data, type, a, o, at) {
  const actor = data.mons[a.actor];
  if (!actor) return;
  switch (type) {
    case 'attack': {
      if (o.result === 'flinched') {
        actor.flinched = false;
        actor.charging = null;
      } else if (o.result === 'charging') {
        actor.charging = a.move;
      } else {
        actor.charging = null;
      }
      const target = data.mons[a.target];
      if (target && (o.result === 'hit' || o.result === 'crit')) {
        if (o.effect_applied !== null && o.effect_applied !== undefined) {
          if (version === 2 && o.effect_applied === 'flinch') target.flinched = true;
          else target.statuses[o.effect_applied] = 2;
        }
        if (o.interrupts_target) target.flinched = true;
        if (o.breaks_charge) target.charging = null;
      }
      tick(actor);
      break;
    }
    case 'status_move': {
      if (o.result === 'flinched') actor.flinched = false;
      actor.charging = null;
      const target = data.mons[a.target];
      if (o.result === 'success' && target) target.statuses[a.status] = o.turns;
      if (o.result === 'self_hit') actor.statuses[a.status] = o.turns;
      if (o.breaks_charge && target) target.charging = null;
      tick(actor);
      break;
    }
    case 'dodge':
      if (o.counted) actor.dodges_used += 1;
      if (version === 2) {
        if (o.result === 'flinched') actor.flinched = false;
        if (a.against !== null) data.answered.push(a.against);
      }
      break;
    case 'pass':
      tick(actor);
      break;
  }
}
