// verify.js and dom.js must run unchanged in a browser: no imports, and none
// of Node's own globals. A static check, since no browser runs in these
// tests (the web page's browser tests load them for real).
import { test } from 'node:test';
import assert from 'node:assert/strict';
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
