// rules/*.js must run unchanged in a browser and a Web Worker: they import
// only each other, use none of Node's globals (nor any web global), and
// re-resolve the fixture exports in a context holding the language alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const verifier = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const rulesDir = path.join(verifier, 'rules');
const files = fs.readdirSync(rulesDir).filter((f) => f.endsWith('.js')).sort();

test('the rules are small modules, one per ruleset', () => {
  for (const f of ['index.js', 'common.js', 'pokemon.js', 'arcana.js', 'berserk.js', 'pbta.js']) assert.ok(files.includes(f), f);
});

for (const file of files) {
  const source = fs.readFileSync(path.join(rulesDir, file), 'utf8');
  // Comments may name anything; the code may not.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');

  test(`rules/${file} imports only its siblings`, () => {
    for (const [, from] of code.matchAll(/\bfrom\s+'([^']+)'/g)) assert.match(from, /^\.\/[a-z0-9-]+\.js$/, from);
    assert.doesNotMatch(code, /\bimport\s*\(/);
  });

  test(`rules/${file} uses none of Node's globals`, () => {
    for (const name of ['process', 'Buffer', 'require', '__dirname', '__filename', 'global', 'setImmediate', 'structuredClone']) {
      assert.doesNotMatch(code, new RegExp(`(?<![.\\w])${name}\\b`), name);
    }
  });
}

test('the rules re-resolve the fixtures in a context with only the language built-ins', () => {
  const run = spawnSync(process.execPath, ['--experimental-vm-modules', '--no-warnings', path.join(verifier, 'tools', 'rules-in-bare-context.mjs')], {
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  const results = JSON.parse(run.stdout);
  assert.ok(Object.keys(results).length >= 6, run.stdout);
  for (const [file, [actions, bad]] of Object.entries(results)) {
    assert.ok(actions > 0, `${file}: no action re-resolved`);
    assert.equal(bad, 0, `${file}: ${bad} outcomes differ`);
  }
});
