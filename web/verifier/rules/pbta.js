// pbta-2d6@1 and @2 (docs/rules.md §4 and §6.4): narrative Pokémon trainers.
// No state: the service records the roll and its band.
import { REQUIRED, fields, participantOf, reject } from './common.js';

const TRAITS = ['brawn', 'grace', 'charm', 'grit', 'wits', 'cool'];
const SPECS = {
  move: {
    actor: ['string', REQUIRED], trait: ['string', REQUIRED], trait_value: ['int?', null],
    helpers: ['strings', []], stakes: ['string', ''],
  },
};

export function pbta(version) {
  return {
    actions: Object.keys(SPECS),
    // §4.1 "Dice: 2d6": one roll of two dice.
    oneRoll: true,
    init(participants) {
      const traits = {};
      for (const p of participants) traits[p.id] = p.traits ?? {};
      return { traits };
    },
    read: (type, action) => {
      const a = fields(action, SPECS[type]);
      a.trait_value_given = Object.prototype.hasOwnProperty.call(action, 'trait_value');
      return a;
    },
    need: (ctx, type, a) => need(version, ctx, a),
    resolve: (ctx, type, a, faces) => resolve(version, ctx, a, faces),
    apply() {},
  };
}

function need(version, ctx, a) {
  const sheet = participantOf(ctx.data.traits, 'actor', a.actor);
  if (version === 1 && !TRAITS.includes(a.trait)) {
    reject('UNKNOWN_TRAIT', `unknown trait \`${a.trait}\`; the traits are ${TRAITS.join(', ')}`);
  }
  if (version === 2) {
    if (a.trait_value !== null) reject('TRAIT_VALUE_FROM_SHEET', '@2: the trait value comes from the sheet');
    if (!TRAITS.includes(a.trait)) reject('UNKNOWN_TRAIT', 'unknown trait');
    if (!(a.trait in sheet)) reject('TRAIT_NOT_ON_SHEET', "the actor's sheet has no such trait");
    if (a.stakes.trim() === '') reject('STAKES_REQUIRED', 'stakes are required');
    if (a.helpers.includes(a.actor) || new Set(a.helpers).size !== a.helpers.length) {
      reject('HELPERS_NOT_OTHERS', 'helpers must be others, each once');
    }
  }
  return [6, 6];
}

function resolve(version, ctx, a, [d1, d2]) {
  const value = a.trait_value ?? ctx.data.traits[a.actor][a.trait] ?? 0;
  const help = a.helpers.length > 0 ? 1 : 0;
  const total = d1 + d2 + value + help;
  const result = total >= 10 ? 'full_success' : total >= 7 ? 'success_with_cost' : 'miss';
  const exposed = version === 2 && result === 'full_success' ? [] : [...a.helpers];
  return { result, total, help, exposed };
}
