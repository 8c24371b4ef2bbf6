#!/usr/bin/env node
// Differential check of the two implementations: random dice expressions
// (valid and not) are rolled by the Rust CLI (`battlelog roll --json`) and
// by verify.js, which must agree on every die, the total, and on which
// expressions are refused. A generator over docs/protocol.md §3's grammar, with
// edge values (limits, fudge dice, explosions, overflow) mixed in.
//
//   node differential.mjs path/to/battlelog [COUNT] [SEED]
//
// Exits 1 on any disagreement (printing it), 2 on bad arguments.
import { spawnSync } from 'node:child_process';

import { DiceExpressionError, deriveRoll } from '../verify.js';

const [binary, countArg = '300', seedArg = String(Date.now() % 1000000)] = process.argv.slice(2);
if (!binary) {
  process.stderr.write('usage: differential.mjs path/to/battlelog [COUNT] [SEED]\n');
  process.exit(2);
}

// A small seeded PRNG (mulberry32): the run is reproducible from its seed.
let state = Number(seedArg) >>> 0;
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (items) => items[Math.floor(random() * items.length)];
const chance = (p) => random() < p;
const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

const space = () => (chance(0.15) ? pick([' ', '  ', '\t']) : '');
const cmp = () => pick(['>=', '<=', '>', '<', '=']);

function dice() {
  let text = '';
  // Mostly valid values, with the limits and just past them now and then.
  if (chance(0.8)) text += String(chance(0.9) ? pick([int(1, 6), int(1, 12), int(1, 3), int(50, 200)]) : pick([0, 1000, 1001]));
  text += pick(['d', 'd', 'd', 'D', 'д', 'Д']);
  text += String(chance(0.9) ? pick([int(1, 20), int(2, 10), 6, 100, '%', 'F', 'F', 1]) : pick([1000000, 0, 1000001]));
  for (let i = int(0, 3); i > 0; i--) {
    text += pick([
      () => '!' + (chance(0.5) ? cmp() + int(0, 8) : ''),
      () => 'r' + (chance(0.5) ? cmp() : '') + int(0, 6),
      () => pick(['kh', 'kl', 'dh', 'dl']) + (chance(0.6) ? String(int(0, 5)) : ''),
    ])();
  }
  if (chance(0.25)) text += cmp() + int(0, 8);
  return text;
}

function atom(depth) {
  const r = random();
  if (r < 0.5) return dice();
  if (r < 0.8 || depth > 3) return String(pick([int(0, 20), int(0, 3), 9223372036854775807n, 3037000500, 9223372036854775808n]));
  return '(' + space() + expr(depth + 1) + space() + ')';
}

function unary(depth) {
  return (chance(0.15) ? '-' + space() : '') + atom(depth);
}

function term(depth) {
  let text = unary(depth);
  while (chance(0.3)) text += space() + pick(['*', '/']) + space() + unary(depth);
  return text;
}

function expr(depth = 0) {
  let text = term(depth);
  while (chance(0.4)) text += space() + pick(['+', '-']) + space() + term(depth);
  return text;
}

function expression() {
  let text = space() + expr() + space();
  if (chance(0.1)) text += '# ' + pick(['attack', 'спасбросок', 'x']);
  if (chance(0.05)) text = text.slice(0, int(0, text.length)); // a truncated one
  return text;
}

const serverSeed = Array.from({ length: 32 }, () => int(0, 255).toString(16).padStart(2, '0')).join('');
const clientSeed = `forum:differential/${seedArg}`;
let disagreements = 0;
let valid = 0;
const count = Number(countArg);
for (let i = 0; i < count; i++) {
  const source = expression();
  const nonce = int(0, 1000);
  const rust = spawnSync(binary, ['roll', '--json', '--server-seed', serverSeed, '--client-seed', clientSeed, '--nonce', String(nonce), '--', source], {
    encoding: 'utf8',
  });
  let js;
  try {
    const derived = await deriveRoll(serverSeed, clientSeed, nonce, source);
    // Arithmetic that fails after the dice are drawn keeps the dice (docs/protocol.md §3):
    // `battlelog roll` prints them with the error, as the audit does.
    js = derived.error ? { refused: derived.error.message, dice: derived.dice } : { total: derived.total, dice: derived.dice };
  } catch (e) {
    if (!(e instanceof DiceExpressionError)) throw e;
    js = { refused: e.message };
  }
  let agree;
  if (rust.status === 0) {
    const r = JSON.parse(rust.stdout);
    valid++;
    const fields = (d) => [d.sides, d.value, d.kept, d.rerolled, d.exploded].join(',');
    const sameDice = Boolean(js.dice) && r.dice.map(fields).join(' ') === js.dice.map(fields).join(' ');
    agree = r.error ? Boolean(js.refused) && sameDice : !js.refused && r.total === js.total && sameDice;
  } else {
    agree = Boolean(js.refused) && rust.status === 2;
  }
  if (!agree) {
    disagreements++;
    process.stderr.write(
      `differential: ${JSON.stringify(source)} nonce ${nonce}: Rust ${rust.status === 0 ? rust.stdout.trim() : `exit ${rust.status}: ${rust.stderr.trim()}`}; JavaScript ${JSON.stringify(js)}\n`,
    );
  }
}
process.stdout.write(`differential: ${count} expressions (${valid} valid), ${disagreements} disagreements (seed ${seedArg})\n`);
process.exit(disagreements === 0 ? 0 : 1);
