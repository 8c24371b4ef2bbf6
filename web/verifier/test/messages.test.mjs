// The verifier's reasons in Russian (messages.js, issue 39 finding 4): the
// exports forged by tools/tamper.mjs (and cut, re-signed, given a wrong or
// an earlier head) raise the problems a judge meets; on a Russian page each
// problem's reason, and the head check's, is known to messages.js and holds
// no English word outside its code values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { bytesToHex, verifyExport } from '../verify.js';
import { checkOutcomes } from '../rules/index.js';
import * as rules from '../rules/index.js';
import { makeExport, rollerSigner } from '../tools/make-export.mjs';
import { badSignature, changeDie, changeOutcome, dropEvent, forgeCrit, resign } from '../tools/tamper.mjs';
import { messageText, problemText, segments } from '../messages.js';
import { summarizeChecks, t } from '../checks.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
const LATIN_WORD = /[A-Za-z]{2,}/;
/** The words of a translated text: its code values left out. */
const words = (text) => segments(text).filter((s) => !s.code).map((s) => s.text).join(' ').replace(/\bd\d+\b/g, '');

function assertRussian(problem, where) {
  const known = problem.what ? true : messageText(problem.message, 'ru') !== null;
  assert.ok(known, `${where}: no Russian for ${JSON.stringify(problem.message)}`);
  const text = problemText(problem, 'ru', { whatText: problem.what ? t('ru', `what.${problem.what}`) : null });
  assert.doesNotMatch(words(text), LATIN_WORD, `${where}: ${JSON.stringify(text)}`);
}

const siteKey = async () => bytesToHex((await rollerSigner()).publicKey);

test('every problem of the forged exports has its Russian reason', async () => {
  const { text, rolls } = await makeExport();
  const lines = text.split('\n').filter(Boolean);
  const forged = {
    'a die changed': (await changeDie(text, rolls[0].version)).text,
    'an event dropped': dropEvent(text).text,
    're-signed by a stranger': (await resign(text)).text,
    'a bad signature': (await badSignature(text)).text,
    'cut before its close': lines.slice(0, -2).join('\n') + '\n',
    'an event edited without re-chaining': lines.map((l, i) => (i === 2 ? l.replace(/"nonce":(\d+)/, '"nonce":7') : l)).join('\n') + '\n',
  };
  let seen = 0;
  for (const [what, body] of Object.entries(forged)) {
    for (const options of [{ rollerKeys: [await siteKey()] }, { head: 'ab'.repeat(32) }]) {
      const report = await verifyExport(body, { rules: null, ...options });
      for (const problem of report.problems) {
        assertRussian(problem, what);
        seen += 1;
      }
    }
  }
  assert.ok(seen >= 10, `only ${seen} problems raised`);
});

test('an outcome forged under the rules: its reason in Russian', async () => {
  const file = fs.readdirSync(fixtures).find((f) => f.startsWith('rules-demo-pokemon'));
  const text = fs.readFileSync(path.join(fixtures, file), 'utf8');
  for (const forge of [changeOutcome, forgeCrit]) {
    let forged;
    try {
      forged = await forge(text);
    } catch {
      continue;
    }
    const report = await verifyExport(forged.text, { rules });
    const outcomes = report.problems.filter((p) => p.check === 'outcomes');
    assert.ok(outcomes.length > 0, JSON.stringify(report.problems));
    for (const problem of outcomes) assertRussian(problem, forge.name);
  }
  assert.ok(checkOutcomes);
});

test('the head check says what it found in Russian, the head given or an earlier one', async () => {
  const { text } = await makeExport();
  const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  for (const head of [lines[lines.length - 1].hash, lines[2].hash]) {
    const report = await verifyExport(text, { rules: null, head });
    const line = summarizeChecks(report, 'ru').find((c) => c.name === 'head').text;
    assert.doesNotMatch(line.replace(/\b[0-9a-f]{64}\b/g, ''), LATIN_WORD, line);
  }
});

test('a file that is not an export: the technical line says why in Russian', async () => {
  const { verdictOf, verdictTexts } = await import('../verdict.js');
  for (const text of ['{"version": 0}\n', 'not json at all\n', '[1, 2]\n', '']) {
    let error = null;
    try {
      await verifyExport(text, { rules: null });
    } catch (e) {
      error = e;
    }
    assert.ok(error, `${JSON.stringify(text)} is refused`);
    const { technical } = verdictTexts(verdictOf({ error }), 'ru');
    for (const line of technical) {
      assert.ok(messageText(error.message, 'ru') !== null, `no Russian for ${JSON.stringify(error.message)}`);
      assert.doesNotMatch(words(messageText(error.message, 'ru')), LATIN_WORD, line);
    }
  }
});

test('a ruling that answers no dispute is a finding, with its reason in Russian', async () => {
  const honest = await verifyExport((await makeExport({ answers: 'dispute' })).text, { rules });
  assert.equal(honest.status, 'verified', JSON.stringify(honest.problems));
  const forged = await makeExport({ answers: 'action' });
  const report = await verifyExport(forged.text, { rules });
  const ruling = report.problems.filter((p) => p.check === 'ruling');
  assert.equal(ruling.length, 1, JSON.stringify(report.problems));
  assert.equal(ruling[0].version, forged.versionOf('JudgeRuling'));
  assert.match(ruling[0].message, /answers version \d+, which is no dispute/);
  assertRussian(ruling[0], 'a ruling answering an action');
  // The verdict's summary marks the judging's line, the outcomes.
  const bad = summarizeChecks(report, 'ru').filter((c) => c.check === 'bad').map((c) => c.name);
  assert.deepEqual(bad, ['outcomes']);
});
