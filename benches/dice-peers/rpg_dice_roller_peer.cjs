// Times Node's rpg-dice-roller on the dice bench's expressions
// (scripts/bench-dice-peers).
//
// Usage: node rpg_dice_roller_peer.cjs SECONDS_PER_CASE OURS::THEIRS ...
// Prints one line per case: `rpg-dice-roller<TAB>ours<TAB>mode<TAB>ns per roll`,
// where mode is `parse` (`new DiceRoll(text)`: parses, then rolls) or
// `preparsed` (`DiceRoll#roll()` on one DiceRoll: rolls its parsed
// expressions again). Both read `total`, which the library sums lazily.
'use strict';

const { DiceRoll } = require('@dice-roller/rpg-dice-roller');

let sink = 0;

// The median over 11 batches of the time per call, in nanoseconds, after a
// warm-up of a fifth of the budget (at least 0.1 s) that lets V8 compile the
// library's hot paths.
function timePerCall(seconds, call) {
  let start = process.hrtime.bigint();
  let calls = 0;
  while (Number(process.hrtime.bigint() - start) < Math.max(0.1, seconds / 5) * 1e9) {
    call();
    calls += 1;
  }
  const perCall = Number(process.hrtime.bigint() - start) / 1e9 / calls;
  const batch = Math.max(1, Math.floor(seconds / 11 / perCall));
  const samples = [];
  for (let s = 0; s < 11; s += 1) {
    start = process.hrtime.bigint();
    for (let i = 0; i < batch; i += 1) call();
    samples.push(Number(process.hrtime.bigint() - start) / batch);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

const seconds = Number(process.argv[2]);
const cases = process.argv.slice(3).map((arg) => {
  const at = arg.indexOf('::');
  return [arg.slice(0, at), arg.slice(at + 2)];
});

// Every case in turn for half a second first, so that the first case timed
// does not pay for V8 compiling the parts the others share.
const warmUntil = process.hrtime.bigint() + 500000000n;
while (process.hrtime.bigint() < warmUntil) {
  for (const [, theirs] of cases) sink += new DiceRoll(theirs).total;
}

for (const [ours, theirs] of cases) {
  let ns = timePerCall(seconds, () => {
    sink += new DiceRoll(theirs).total;
  });
  console.log(`rpg-dice-roller\t${ours}\tparse\t${ns.toFixed(1)}`);
  const roll = new DiceRoll(theirs);
  ns = timePerCall(seconds, () => {
    roll.roll();
    sink += roll.total;
  });
  console.log(`rpg-dice-roller\t${ours}\tpreparsed\t${ns.toFixed(1)}`);
}
// Keeps the totals observable so no work is optimised away.
if (Number.isNaN(sink)) console.error('no total');
