// Random battles for the rules differential and the live battles: random
// sheets for every ruleset version, random actions (valid and not, aimed
// mostly at what the battle so far makes meaningful), disputes and rulings
// with overrides, and dice mostly right. Seeded: the same seed gives the
// same battles.
//
//   const g = generator(seed, { common: 0.08 });   (common: the share of
//       disputes and rulings among the actions)
//   g.participants(ruleset) → sheets
//   g.action(ruleset, ids, lines, state) → action   (lines: the script's
//       action lines so far, {action, dice}; state: the JS rules' state)
//   g.dice(sides | null) → faces
export function generator(seed, { common = 0.08 } = {}) {
  // A small seeded PRNG (mulberry32): the run is reproducible from its seed.
  let seedState = Number(seed) >>> 0;
  function random() {
    seedState = (seedState + 0x6d2b79f5) >>> 0;
    let t = seedState;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  const pick = (items) => items[Math.floor(random() * items.length)];
  const chance = (p) => random() < p;
  const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
  const maybe = (p, value) => (chance(p) ? value : undefined);
  /** An object without its undefined fields (absent in the script). */
  const obj = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

  // ---------------------------------------------------------------- sheets
  const NAMES = ['pikachu', 'meowth', 'eevee', 'ash', 'misty', 'mage', 'necro', 'a', 'b', 'c'];
  const TRAITS = ['brawn', 'grace', 'charm', 'grit', 'wits', 'cool'];

  function participants(ruleset) {
    const count = int(2, 3);
    // A strike names its sides by id: berserk battles are mostly between
    // `a` and `b` (the generator's sides), now and then between others.
    const berserkPair = ruleset.startsWith('berserk') && chance(0.95);
    const names = berserkPair ? NAMES.filter((n) => n !== 'a' && n !== 'b') : NAMES;
    const ids = [...names].sort(() => random() - 0.5).slice(0, count);
    return ids.map((id) => {
      if (ruleset.startsWith('arcana')) {
        const abilities = {};
        for (const name of ['Ареометизм', 'Щит', 'Меч', 'Молния'].slice(0, int(0, 4))) {
          abilities[name] = obj({
            per_episode: maybe(0.5, int(1, 3)),
            magical: ruleset.endsWith('@2') ? maybe(0.5, chance(0.5)) : undefined,
            min_points: ruleset.endsWith('@2') ? maybe(0.4, int(1, 12)) : undefined,
          });
        }
        return { id, abilities };
      }
      if (ruleset.startsWith('pbta')) {
        const traits = {};
        for (const t of TRAITS) if (chance(0.85)) traits[t] = int(-2, 3);
        return { id, traits };
      }
      return { id };
    }).map((p, i) => (berserkPair && i < 2 ? { id: 'ab'[i] } : p));
  }

  // --------------------------------------------------------------- actions
  // Each generator gets the battle so far: ids, and the lines written (to
  // aim `against` / `refers_to` at earlier lines, mostly the right kind).
  function ref(lines, type, p = 0.85) {
    const indices = lines.map((l, i) => (l.action.type === type ? i : -1)).filter((i) => i >= 0);
    if (indices.length > 0 && chance(p)) return chance(0.6) ? indices[indices.length - 1] : pick(indices);
    return lines.length === 0 ? 0 : int(0, lines.length + 1);
  }

  const STATUSES = ['paralysis', 'infatuation', 'confusion', 'burn', 'poison', 'sleep'];
  function pokemonAction(ids, lines, version) {
    const actor = chance(0.97) ? pick(ids) : 'nobody';
    const target = chance(0.97) ? pick(ids) : 'ghost';
    const r = random();
    if (r < 0.4) {
      const multi = chance(0.2);
      return obj({
        type: 'attack', actor, target, move: pick(['Tackle', 'Solar Beam', 'Fake Out', 'Swift', 'Fury Swipes']),
        power: maybe(0.7, pick([0, 1, 40, 65, 80, 90, 120, 101, 7])),
        effect: maybe(0.4, pick(['burn', 'poison', 'paralysis', 'confusion', 'infatuation', 'flinch'])),
        interrupt: maybe(0.3, chance(0.4)), multi_hit: maybe(0.3, multi), two_turn: maybe(0.3, chance(0.5)),
        variable_power: maybe(0.3, multi ? chance(0.1) : chance(0.4)), never_miss: maybe(0.3, chance(0.5)),
        high_crit: maybe(0.3, chance(0.5)), priority: maybe(0.3, chance(0.5)), prefer: maybe(0.3, pick(['crit', 'effect'])),
      });
    }
    if (r < 0.6) {
      return { type: 'status_move', actor, target, move: pick(['Thunder Wave', 'Attract', 'Supersonic']), status: pick(STATUSES) };
    }
    if (r < 0.85) {
      // Mostly the target of the latest attack, which is who would dodge it.
      const lastAttack = [...lines].reverse().find((l) => l.action.type === 'attack');
      return obj({
        type: 'dodge', actor: lastAttack && chance(0.7) ? lastAttack.action.target : actor, priority: maybe(0.5, chance(0.4)), teleport: maybe(0.5, chance(0.4)),
        incoming_damage: maybe(0.5, pick([0, 47, 60, 101, 13])),
        against: version === 2 ? maybe(0.95, ref(lines, 'attack')) : maybe(0.03, 0),
      });
    }
    if (r < 0.92) return { type: 'metronome', actor, moves: ['Tackle', 'Ember', 'Surf', 'Fly', 'Growl', 'Bite'].slice(0, chance(0.05) ? 0 : int(1, 6)) };
    return { type: 'pass', actor };
  }

  function arcanaAction(ids, lines, version) {
    const r = random();
    if (r < 0.07) return { type: 'start_episode' };
    const use = obj({
      type: r < 0.72 ? 'cast' : 'defend',
      actor: chance(0.97) ? pick(ids) : 'nobody',
      ability: maybe(0.6, pick(['Ареометизм', 'Щит', 'Меч', 'Молния', 'Тень'])),
      skill_points: chance(0.95) ? int(1, 12) : pick([0, 13, -1]),
      specialization_matches: maybe(0.5, chance(0.7)),
      artifact_bonus: maybe(0.4, chance(0.7) ? int(0, 3) : [int(0, 3), int(0, 3)]),
      berserk_bonus: maybe(0.3, int(0, 2)), aux_bonus: maybe(0.3, int(0, 2)),
      post: pick(['p1', 'p2', 'p3']),
    });
    if (use.type === 'defend') use.against = ref(lines, 'cast');
    return use;
  }

  function side(version, attacker) {
    return obj({
      id: attacker ? 'a' : 'b',
      strike: maybe(0.6, [int(0, 3), int(1, 4), int(2, 6)]),
      [attacker ? 'attack_experience' : 'defense_experience']: maybe(0.4, int(0, 3)),
      die_modifier: maybe(0.4, int(-3, 3)),
      closed: attacker ? undefined : maybe(0.3, chance(0.3)),
      avoid_exchange: maybe(version === 1 ? 0.5 : 0.03, chance(0.5)),
      fixed_roll: maybe(version === 2 ? 0.2 : 0.02, chance(0.85) ? int(1, 6) : pick([0, 7, 2.5, '3'])),
    });
  }

  function berserkAction(ids, lines, version, state) {
    const r = random();
    const pending = state.data.pending;
    // A strike awaiting its choice is mostly answered, by the right side.
    if (version === 2 && (r < 0.1 || (pending && chance(0.75)))) {
      const against = pending && chance(0.85) ? pending.at : ref(lines, 'strike', 0.95);
      const actor = pending && chance(0.8) ? pending.chooser : chance(0.9) ? pick(['a', 'b']) : 'c';
      return { type: 'exchange_choice', actor, against, avoid: chance(0.97) ? chance(0.5) : pick(['yes', 1]) };
    }
    if (r < 0.85) {
      return obj({
        type: 'strike', attacker: side(version, true), defender: side(version, false),
        kind: chance(0.6) ? 'simple' : pick(['unanswerable', 'special', 'magic', 'through_row', 'shot', 'discharge', 'throw']),
        own_squad: maybe(0.3, chance(0.2)),
      });
    }
    return obj({ type: 'effect', actor: pick(['a', 'b']), values: [int(0, 3), int(2, 5), int(4, 9)], die_modifier: maybe(0.4, int(-3, 3)) });
  }

  function pbtaAction(ids, lines, version) {
    const actor = chance(0.97) ? pick(ids) : 'nobody';
    const others = [...ids, 'pikachu'].filter((id) => id !== actor);
    const helpers = chance(0.5) ? [] : chance(0.8) ? [pick(others)] : [...Array(int(1, 3))].map(() => (chance(0.8) ? pick(others) : actor));
    return obj({
      type: 'move', actor, trait: chance(0.95) ? pick(TRAITS) : pick(['luck', 'Brawn']),
      trait_value: maybe(version === 1 ? 0.4 : 0.05, int(-2, 3)),
      helpers: maybe(0.8, helpers),
      stakes: maybe(version === 2 ? 0.97 : 0.5, chance(0.9) ? pick(['the bridge holds', 'Misty trusts you']) : pick(['  ', ''])),
    });
  }

  // Overrides a judge might lay over an outcome: fields of the right kind.
  function override(action) {
    switch (action.type) {
      case 'attack': return pick([{ result: 'hit', multiplier: '1' }, { effect_applied: pick(['burn', null]) }, { interrupts_target: chance(0.5) }, { breaks_charge: chance(0.5) }, { damage: int(0, 90) }]);
      case 'status_move': return pick([{ turns: int(0, 4) }, { result: pick(['success', 'failed']) }]);
      case 'dodge': return pick([{ counted: chance(0.5) }, { reduction_percent: pick([0, 50, 100]) }]);
      case 'cast': case 'defend': return pick([{ result: pick(['success', 'failure', 'critical_success', 'ordinary_failure']) }, { concentration_broken: chance(0.5) }]);
      case 'strike': return pick([{ attacker_tier: pick(['weak', 'medium', 'strong', 'miss']) }, { defender_tier: pick(['weak', 'miss']) }]);
      case 'move': return pick([{ result: pick(['full_success', 'miss']) }, { total: int(2, 14) }]);
      case 'metronome': return { picked: pick(['Surf', 'Fly']) };
      case 'effect': return pick([{ tier: 'y' }, { value: int(0, 9) }]);
      case 'exchange_choice': return pick([{ exchange_avoided: chance(0.5) }, { attacker_tier: 'weak' }]);
      case 'start_episode': return { result: 'episode_started' };
      default: return { result: 'pass' };
    }
  }

  function commonAction(lines) {
    const refersTo = lines.length === 0 ? 0 : chance(0.9) ? int(0, lines.length - 1) : int(0, lines.length + 2);
    if (chance(0.4)) return { type: 'dispute', by: 'ash', refers_to: refersTo, reason: 'that was a 5' };
    const ruling = { type: 'ruling', judge: 'judge-anna', refers_to: refersTo, text: 'so ruled' };
    const referred = lines[refersTo]?.action;
    if (referred && chance(0.6)) ruling.override = chance(0.8) ? override(referred) : badOverride(referred);
    return ruling;
  }

  // Overrides that are no outcome of the referred action: an unknown field,
  // a value of the wrong type or out of range, a field of the other version.
  function badOverride(action) {
    const fields = {
      attack: ['result', 'damage', 'hits', 'effect_applied', 'multiplier'], status_move: ['turns', 'result', 'breaks_charge'],
      dodge: ['result', 'counted', 'reduction_percent', 'damage_after'], cast: ['sum', 'result', 'concentration_broken'],
      defend: ['attack_lands', 'total_skill'], strike: ['diff', 'attacker_tier', 'pending_choice', 'attacker_damage'],
      effect: ['value', 'tier'], exchange_choice: ['diff', 'exchange_avoided'], move: ['total', 'help', 'exposed', 'result'],
      metronome: ['picked'], pass: ['result'], start_episode: ['result'], roll: ['total'],
    }[action.type] ?? ['result'];
    return { [chance(0.15) ? pick(['bogus', 'damage_total', 'tier']) : pick(fields)]: pick([-3, 2.5, 'x', true, null, 'miss', 'crit', 7, [1], {}]) };
  }

  const GENERATORS = { pokemon: pokemonAction, arcana: arcanaAction, berserk: berserkAction, pbta: pbtaAction };

  // ------------------------------------------------------------------ dice
  // The right dice most of the time (the JS engine's count and sides, as
  // the JS engine reads the action: the Rust rules judge them on their own),
  // and now and then a wrong count or a face out of range.
  function dice(expected) {
    const sides = expected ?? [6];
    const faces = sides.map((s) => int(1, s));
    const r = random();
    if (r < 0.04) faces.push(int(1, 6));
    else if (r < 0.07 && faces.length > 0) faces.pop();
    else if (r < 0.1 && faces.length > 0) faces[int(0, faces.length - 1)] = pick([0, 7, 11, 21, -1, 100]);
    return faces;
  }

  function action(ruleset, ids, lines, state) {
    const version = Number(ruleset.split('@')[1]);
    const generate = GENERATORS[ruleset.split(/[-@]/)[0]];
    return chance(common) ? commonAction(lines) : generate(ids, lines, version, state);
  }

  return { participants, action, dice, random, chance, int, pick };
}
