// verify.js and dom.js must run unchanged in a browser: no imports, and none
// of Node's own globals. No browser runs in these tests (the web page's
// browser tests load them for real), so: a static check of the source, and a
// run in a context that holds only the web globals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

for (const file of ['verify.js', 'dom.js']) {
  const source = fs.readFileSync(path.join(dir, file), 'utf8');
  // Comments may name anything; the code may not.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');

  test(`${file} imports nothing`, () => {
    assert.doesNotMatch(code, /^\s*import\b/m);
    assert.doesNotMatch(code, /\bimport\s*\(/);
  });

  test(`${file} uses none of Node's globals`, () => {
    for (const name of ['process', 'Buffer', 'require', '__dirname', '__filename', 'global', 'setImmediate']) {
      assert.doesNotMatch(code, new RegExp(`(?<![.\\w])${name}\\b`), name);
    }
  });
}

test('verify.js verifies the fixtures in a context with only web globals', () => {
  const run = spawnSync(process.execPath, ['--experimental-vm-modules', '--no-warnings', path.join(dir, 'tools', 'in-web-context.mjs')], {
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), {
    'demo-pokemon-closed.jsonl': ['verified', 'ok'],
    'open-pokemon.jsonl': ['unrevealed', 'ok'],
  });
});
