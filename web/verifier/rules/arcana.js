// arcana-2d10@1 and @2 (docs/rules.md §2 and §6.2): roll-under 2d10 skill checks.
// State: uses of each (actor, ability) in the episode; the (actor, post)
// pairs whose concentration is broken.
import { REQUIRED, fields, invalid, isInt, participantOf, reject } from './common.js';

const USE = {
  actor: ['string', REQUIRED], ability: ['string?', null], skill_points: ['int', REQUIRED],
  specialization_matches: ['bool', true], artifact_bonus: ['any', 0], berserk_bonus: ['uint', 0],
  aux_bonus: ['uint', 0], post: ['string', REQUIRED],
};
const SPECS = {
  cast: USE,
  defend: { ...USE, against: ['uint', REQUIRED] },
  start_episode: {},
};

export function arcana(version) {
  return {
    actions: Object.keys(SPECS),
    // §2.1 "Dice: 2d10": one roll of two dice.
    oneRoll: true,
    init(participants) {
      const sheets = {};
      for (const p of participants) sheets[p.id] = p.abilities ?? {};
      return { sheets, uses: {}, broken: [] };
    },
    read(type, action) {
      const a = fields(action, SPECS[type]);
      if (type !== 'start_episode') {
        const art = a.artifact_bonus;
        const ok = (v) => isInt(v) && v >= 0;
        if (!(ok(art) || (Array.isArray(art) && art.every(ok)))) invalid('artifact_bonus: a count or a list of counts');
      }
      return a;
    },
    need: (ctx, type, a) => need(version, ctx, type, a),
    resolve: (ctx, type, a, faces) => resolve(ctx, type, a, faces),
    apply,
  };
}

const useKey = (actor, ability) => JSON.stringify([actor, ability]);
const postKey = (actor, post) => JSON.stringify([actor, post]);

/** §6.2.1: what the sheet says of an ability (none on the sheet: magical,
 * no minimum, no limit). */
function ability(data, actor, name) {
  const sheet = (data.sheets[actor] ?? {})[name] ?? {};
  return {
    perEpisode: sheet.per_episode ?? null,
    magical: sheet.magical ?? true,
    minPoints: sheet.min_points ?? null,
  };
}

function need(version, ctx, type, a) {
  if (type === 'start_episode') return [];
  const data = ctx.data;
  participantOf(data.sheets, 'actor', a.actor);
  if (a.skill_points < 1 || a.skill_points > 12) {
    reject('SKILL_POINTS_OUT_OF_RANGE', `skill_points ${a.skill_points} is outside 1..=12`);
  }
  if (version === 2) notAgainstACast(ctx, type, a, version);
  if (a.ability !== null) {
    const ab = ability(data, a.actor, a.ability);
    if (version === 2 && ab.minPoints !== null && ab.minPoints > a.skill_points) {
      reject('ABILITY_NEEDS_MORE_POINTS', 'ability needs more skill points');
    }
    if (ab.perEpisode !== null && (data.uses[useKey(a.actor, a.ability)] ?? 0) >= ab.perEpisode) {
      reject('ABILITY_USED_UP', `ability «${a.ability}» of ${a.actor} is used up for this episode (${ab.perEpisode} per episode)`);
    }
  }
  if (data.broken.includes(postKey(a.actor, a.post))) {
    if (version === 1) reject('CONCENTRATION_BROKEN', 'concentration broken in this post');
    if (a.ability !== null && ability(data, a.actor, a.ability).magical) {
      reject('CONCENTRATION_BROKEN', 'concentration broken in this post: no magical abilities');
    }
  }
  if (version === 1) notAgainstACast(ctx, type, a, version);
  return [10, 10];
}

/** §2.2: a defence answers a resolved cast. */
function notAgainstACast(ctx, type, a, version) {
  if (type !== 'defend') return;
  const entry = ctx.entry(a.against);
  if (!entry || entry.type !== 'cast') {
    reject('DEFEND_NOT_AGAINST_A_CAST', version === 1 ? `against ${a.against}: not a resolved cast of this battle` : 'against is not a resolved cast');
  }
}

function specialization(points) {
  if (points <= 1) return 0;
  if (points <= 4) return 1;
  if (points <= 7) return 2;
  if (points <= 9) return 3;
  return 4;
}

/** §2.1: one use's roll. */
function roll(a, [d1, d2]) {
  const art = Array.isArray(a.artifact_bonus) ? Math.max(0, ...a.artifact_bonus) : a.artifact_bonus;
  const points = a.skill_points;
  const total = points + (a.specialization_matches ? specialization(points) : 0) + art + a.berserk_bonus + a.aux_bonus;
  const sum = d1 + d2;
  let result;
  if (sum === 2) result = 'critical_success';
  else if (sum === 20 && points === 12) result = 'ordinary_failure';
  else if (sum === 20) result = 'critical_failure';
  else if (sum === 19 && !(points === 12 && total >= 19)) result = 'ordinary_failure';
  else if (sum <= total) result = 'success';
  else result = 'failure';
  // The vectors read "this roll broke the actor's concentration" as: this
  // roll is one that breaks it (§6.2.2 lets a non-magical use fail again in
  // a post whose concentration is already broken; it reports true too).
  const breaks = result === 'ordinary_failure' || result === 'critical_failure';
  return { result, sum, total_skill: total, concentration_broken: breaks };
}

const succeeded = (r) => r === 'success' || r === 'critical_success';

function resolve(ctx, type, a, faces) {
  if (type === 'start_episode') return { result: 'episode_started' };
  const out = roll(a, faces);
  if (type === 'defend') {
    const attack = ctx.entry(a.against).effective.result;
    const defence = out.result;
    out.attack_lands = succeeded(attack)
      && !(succeeded(defence) && (attack !== 'critical_success' || defence === 'critical_success'));
  }
  return out;
}

function apply(data, type, a, o) {
  if (type === 'start_episode') {
    data.uses = {};
    return;
  }
  if (a.ability !== null) {
    const key = useKey(a.actor, a.ability);
    data.uses[key] = (data.uses[key] ?? 0) + 1;
  }
  const key = postKey(a.actor, a.post);
  if (o.concentration_broken && !data.broken.includes(key)) data.broken.push(key);
}
