#!/usr/bin/env node
// Differential check of the two rules engines: random battles under every
// ruleset version (random sheets, random actions valid and not, random
// dice in range and out of range or of the wrong count, disputes and
// rulings with overrides) are written as scripts in the vectors' format,
// played by the Rust rules (`battlelog rules play --script FILE`) and by
// rules/index.js, which must give the same line for every action: the
// same outcome (deep-equal JSON), the same rejection (its message), or
// both an error (the dice do not fit).
//
//   node rules-differential.mjs path/to/battlelog [COUNT] [SEED] [--keep DIR]
//
// COUNT is the number of action lines to play (default 1500), SEED the
// PRNG's seed (the run is reproducible from it). Prints
//   rules-differential: N actions, M disagreements
// and exits 1 on any disagreement (printing the first few with the script
// line and both outputs), 2 on bad arguments or a failed run of the CLI.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { RulesInputError, RulesRejection, diceNeeded, openBattle, playScript, resolveAction, rulesetIds, sameJson } from '../rules/index.js';
import { generator } from './rules-random.mjs';

const args = process.argv.slice(2);
const keepAt = args.indexOf('--keep');
const keep = keepAt >= 0 ? args.splice(keepAt, 2)[1] : null;
const [binary, countArg = '1500', seedArg = String(Date.now() % 1000000)] = args;
if (!binary || !/^[0-9]+$/.test(countArg) || !/^[0-9]+$/.test(seedArg)) {
  process.stderr.write('usage: rules-differential.mjs path/to/battlelog [COUNT] [SEED] [--keep DIR]\n');
  process.exit(2);
}

const g = generator(Number(seedArg));

// ------------------------------------------------------------------ run
// A refused override is worded by the Rust reader (serde's messages): both
// must refuse the same ruling for the same referred action; the words after
// that may differ, except for a field of the other version.
function sameOverrideRefusal(rust, js) {
  const head = /^the override does not fit the outcome of `[a-z_]+`: /;
  const [r, j] = [head.exec(rust), head.exec(js)];
  if (!r || !j || r[0] !== j[0]) return false;
  const versionField = / is not part of a /;
  return versionField.test(rust) || versionField.test(js) ? rust === js : true;
}

// The dice are right for the JS engine's reading of each action (and now
// and then wrong): the Rust rules judge them on their own.
function battle(ruleset, actions) {
  const open = { ruleset, participants: g.participants(ruleset) };
  const ids = open.participants.map((p) => p.id);
  const lines = [];
  let state = openBattle(open.ruleset, open.participants);
  for (let i = 0; i < actions; i++) {
    const action = g.action(ruleset, ids, lines, state);
    const line = { action, dice: g.dice(diceNeeded(state, action)) };
    const r = resolveAction(state, action, line.dice, i);
    if ('outcome' in r) state = r.state;
    lines.push(line);
  }
  return { open, lines };
}

// Sheets a battle cannot open with: the CLI fails the whole script on its
// first line, naming why; the JS engine must refuse the opening alike.
function brokenSheets(ruleset) {
  const arcana = ruleset.startsWith('arcana');
  return g.pick([
    () => [{ id: 'a' }, { id: 'b' }, { id: 'a' }],
    () => [],
    () => [{ id: 'a', abilities: { Щит: { min_points: g.pick([0, 1, 12, 13, 20]) } } }],
    () => [{ id: 'a', abilities: { Меч: { magical: false, per_episode: 2 } } }],
    () => [{ id: 'a', traits: { [g.pick(['luck', 'Wits', 'wits'])]: 1 } }],
    () => [{ id: 'a', traits: { grit: 'x' } }],
    () => [{ id: 'a', hp: 30 }],
    () => [{ id: 'a', abilities: { Щит: { per_episode: g.pick([0, 2]) } } }, { id: arcana ? 'b' : 'a' }],
  ])();
}

/** Whether an opening is refused alike: the CLI's stderr names the reason
 * (`cannot open the battle: …`, or `not an open line` for a sheet it cannot
 * read), the JS engine throws a RulesRejection with the same words or a
 * RulesInputError. */
function openingAgrees(run, open) {
  let js = null;
  try {
    openBattle(open.ruleset, open.participants);
  } catch (e) {
    js = e;
  }
  if (run.status === 0) return js === null;
  const refused = /line 1: cannot open the battle: (.*)$/m.exec(run.stderr);
  if (refused) return js instanceof RulesRejection && js.message === refused[1].trim();
  return /line 1: not an open line/.test(run.stderr) && js instanceof RulesInputError;
}

const dir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'rules-differential-'));
fs.mkdirSync(dir, { recursive: true });
const target = Number(countArg);
let played = 0;
let disagreements = 0;
const kinds = { outcome: 0, rejected: 0, error: 0 };
const shown = [];
let n = 0;
let openings = 0;
while (played < target) {
  const ruleset = rulesetIds[n % rulesetIds.length];
  if (g.chance(0.04)) {
    const open = { ruleset, participants: brokenSheets(ruleset) };
    const file = path.join(dir, `${String(n).padStart(4, '0')}-${ruleset.replace('@', '_')}.open.script.jsonl`);
    fs.writeFileSync(file, `${JSON.stringify({ open })}\n${JSON.stringify({ action: { type: 'roll', actor: 'a', expression: '1d6', purpose: 'x' }, dice: [3] })}\n`);
    const run = spawnSync(binary, ['rules', 'play', '--script', file], { encoding: 'utf8' });
    openings += 1;
    if (!openingAgrees(run, open)) {
      disagreements += 1;
      let js = 'opened';
      try {
        openBattle(open.ruleset, open.participants);
      } catch (e) {
        js = `${e.name}: ${e.message}`;
      }
      shown.push(`${path.basename(file)} line 1: ${JSON.stringify({ open })}\n  rust: exit ${run.status} ${run.stderr.trim()}\n  js:   ${js}`);
    }
    n += 1;
    continue;
  }
  const size = Math.min(target - played, g.int(8, 40));
  const { open, lines } = battle(ruleset, size);
  const text = [JSON.stringify({ open }), ...lines.map((l) => JSON.stringify(l))].join('\n') + '\n';
  const file = path.join(dir, `${String(n).padStart(4, '0')}-${ruleset.replace('@', '_')}.script.jsonl`);
  fs.writeFileSync(file, text);
  const run = spawnSync(binary, ['rules', 'play', '--script', file], { encoding: 'utf8' });
  if (run.status !== 0) {
    process.stderr.write(`rules-differential: ${binary} rules play --script ${file} exited ${run.status}: ${run.stderr}`);
    process.exit(2);
  }
  const rust = run.stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
  const js = playScript(text);
  lines.forEach((line, i) => {
    const [r, j] = [rust[i], js[i]];
    if (r) kinds['outcome' in r ? 'outcome' : 'rejected' in r ? 'rejected' : 'error'] += 1;
    const agree = r && (('outcome' in r && 'outcome' in j && sameJson(r.outcome, j.outcome))
      || ('rejected' in r && 'rejected' in j && (r.rejected === j.rejected || sameOverrideRefusal(r.rejected, j.rejected)))
      || ('error' in r && 'error' in j));
    if (!agree) {
      disagreements += 1;
      if (shown.length < (process.env.RULES_DIFF_SHOW ? Number(process.env.RULES_DIFF_SHOW) : 8)) {
        shown.push(`${path.basename(file)} line ${i + 2} (action ${i}): ${JSON.stringify(line)}\n  rust: ${JSON.stringify(r && { ...r, summary_ru: undefined, summary_en: undefined })}\n  js:   ${JSON.stringify(j)}`);
      }
    }
  });
  played += lines.length;
  n += 1;
}
for (const s of shown) process.stdout.write(`${s}\n`);
process.stdout.write(`rules-differential: ${played} actions, ${disagreements} disagreements (seed ${seedArg}, ${n} battles, ${openings} of them refused sheets; the Rust rules gave ${kinds.outcome} outcomes, ${kinds.rejected} rejections, ${kinds.error} dice errors${keep ? `, scripts in ${dir}` : ''})\n`);
if (!keep) fs.rmSync(dir, { recursive: true, force: true });
process.exit(disagreements === 0 ? 0 : 1);
