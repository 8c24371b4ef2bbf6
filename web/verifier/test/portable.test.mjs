// The verifier's modules must run unchanged in a browser: they import only
// files beside them (by relative path, as the page loads them), and use none
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

const files = fs
  .readdirSync(dir, { recursive: true })
  .filter((f) => f.endsWith('.js') && !f.startsWith('test') && !f.startsWith('tools') && !f.startsWith('node_modules'));

test('the browser modules are found', () => {
  for (const f of ['verify.js', 'dom.js', 'audit.js', 'worker.js', path.join('pages', 'battle.js')]) assert.ok(files.includes(f), f);
});

for (const file of files) {
  const source = fs.readFileSync(path.join(dir, file), 'utf8');
  // Comments may name anything; the code may not.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');

  test(`${file} imports only files beside it`, () => {
    for (const [, specifier] of code.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]/gm)) {
      assert.match(specifier, /^\.\.?\/[\w./-]+\.js$/, `${file} imports ${specifier}`);
    }
    for (const [, specifier] of code.matchAll(/\bimport\s*\(\s*(?:['"]([^'"]*)['"])?/g)) {
      assert.match(specifier ?? '', /^\.\.?\/[\w./-]+\.js$/, `${file} imports a computed or foreign module`);
    }
  });

  test(`${file} uses none of Node's globals`, () => {
    for (const name of ['process', 'Buffer', 'require', '__dirname', '__filename', 'global', 'setImmediate']) {
      // A method of that name (`process(view, offset) {`) is not the global.
      assert.doesNotMatch(code, new RegExp(`(?<![.\\w])${name}\\b(?!\\([\\w\\s,]*\\)\\s*\\{)`), name);
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
