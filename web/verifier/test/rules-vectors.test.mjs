// The JavaScript rules (rules/index.js) held to the public rules vectors:
// every script of vectors/rules and vectors/rules-next is played and every
// line compared with its expected line — an outcome deep-equal (integers
// as integers), a rejection with the same words, a dice error as an error.
// Both directories are required: a missing one fails the run, never skips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { playScript, rulesetIds } from '../rules/index.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const vectorsDir = process.env.BATTLELOG_VECTORS || path.join(repoRoot, 'tests', 'vectors');
const dirs = ['rules', 'rules-next'].map((d) => path.join(vectorsDir, d));
for (const dir of dirs) {
  if (!fs.existsSync(dir)) {
    // Thrown at load time: node --test reports the file as failed.
    throw new Error(`${dir} is missing: set BATTLELOG_VECTORS to the directory holding rules/ and rules-next/`);
  }
}

const readLines = (file) => fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
const scripts = dirs.flatMap((dir) => fs.readdirSync(dir).filter((f) => f.endsWith('.script.jsonl')).sort().map((f) => path.join(dir, f)));

test('the vectors cover every ruleset version the engine knows, and no other', () => {
  assert.ok(scripts.length > 0, 'no rules scripts');
  const covered = new Set(scripts.map((file) => readLines(file)[0].open.ruleset));
  assert.deepEqual([...covered].sort(), [...rulesetIds].sort());
});

let total = 0;
for (const script of scripts) {
  const name = `${path.basename(path.dirname(script))}/${path.basename(script)}`;
  test(name, () => {
    const expectedFile = script.replace(/\.script\.jsonl$/, '.expected.jsonl');
    assert.ok(fs.existsSync(expectedFile), `${expectedFile} is missing`);
    const actions = readLines(script).slice(1);
    const expected = readLines(expectedFile);
    const got = playScript(fs.readFileSync(script, 'utf8'));
    assert.equal(expected.length, actions.length, 'one expected line per action line');
    assert.equal(got.length, actions.length, 'one output line per action line');
    expected.forEach((want, i) => {
      const where = `${name} action ${i}: ${JSON.stringify(actions[i])}`;
      if ('outcome' in want) {
        assert.ok('outcome' in got[i], `${where}: expected an outcome, got ${JSON.stringify(got[i])}`);
        assert.deepStrictEqual(got[i].outcome, want.outcome, where);
      } else if ('rejected' in want) {
        assert.equal(got[i].rejected, want.rejected, `${where}: got ${JSON.stringify(got[i])}`);
      } else {
        assert.ok('error' in want && 'error' in got[i], `${where}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got[i])}`);
      }
      total += 1;
    });
  });
}

test('every expected line was compared', () => {
  // Runs last (node:test keeps the order of a file's tests).
  const lines = scripts.reduce((n, s) => n + readLines(s.replace(/\.script\.jsonl$/, '.expected.jsonl')).length, 0);
  assert.ok(lines > 0, 'no expected lines');
  assert.equal(total, lines, 'expected lines compared');
});
