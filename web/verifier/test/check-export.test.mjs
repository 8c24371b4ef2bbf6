// check-export.mjs as a command: its exit status and its one stderr line
// are what scripts rely on.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { makeExport } from '../tools/make-export.mjs';
import { changeDie } from '../tools/tamper.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.join(here, '..', 'check-export.mjs');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'check-export-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function check(text, ...args) {
  const file = path.join(dir, `export-${Math.random().toString(16).slice(2)}.jsonl`);
  fs.writeFileSync(file, text);
  return spawnSync(process.execPath, [script, file, ...args], { encoding: 'utf8' });
}

test('verified and unrevealed exit 0, failed exits 1 naming the version', async () => {
  const closed = check((await makeExport()).text);
  assert.equal(closed.status, 0, closed.stderr);
  assert.match(closed.stdout, /^verified b-test-battle: /);
  const open = check((await makeExport({ closed: false })).text);
  assert.equal(open.status, 0, open.stderr);
  assert.match(open.stdout, /^unrevealed /);
  const { text, rolls } = await makeExport();
  const forged = check((await changeDie(text, rolls[0].version)).text);
  assert.equal(forged.status, 1);
  assert.match(forged.stdout, new RegExp(`^failed .*first failure ${rolls[0].version};`));
  assert.equal(forged.stderr.trim().split('\n').length, 1);
  assert.match(forged.stderr, new RegExp(`version ${rolls[0].version}: roll: `));
});

test('--head: a cut-short export fails, the right head passes', async () => {
  const { text, lastVersion } = await makeExport();
  const all = text.trim().split('\n');
  const head = JSON.parse(all.at(-1)).hash;
  assert.equal(check(text, '--head', head).status, 0);
  // Cut before the close, so that only the head can tell.
  const cut = check(all.slice(0, -3).join('\n'), '--head', head);
  assert.equal(cut.status, 1);
  assert.match(cut.stderr, new RegExp(`version ${lastVersion - 2}: head: `));
  assert.equal(check(all.slice(0, -3).join('\n')).status, 0, 'without the head, nothing shows');
});

test('bad input exits 2 with one line', () => {
  for (const result of [
    check('this is not JSON'),
    check(''),
    check('{}', '--head', 'xyz'),
    spawnSync(process.execPath, [script, path.join(dir, 'missing.jsonl')], { encoding: 'utf8' }),
    spawnSync(process.execPath, [script], { encoding: 'utf8' }),
  ]) {
    assert.equal(result.status, 2, result.stderr);
    assert.equal(result.stderr.trim().split('\n').length, 1);
    assert.match(result.stderr, /^check-export: /);
  }
});
