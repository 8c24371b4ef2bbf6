// The verdict a judge reads first (verdict.js, issue 39): each kind from a
// real export (tools/make-export.mjs) and the forgeries of tools/tamper.mjs,
// in both languages, never plain "verified" for an unpinned key, and a
// failure after which the words do not mislead (finding 3).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ExportFormatError, bytesToHex, verifyExport } from '../verify.js';
import { makeExport, rollerSigner } from '../tools/make-export.mjs';
import { changeDie, resign } from '../tools/tamper.mjs';
import { hexFieldProblem, verdictOf, verdictTexts } from '../verdict.js';
import { STRINGS } from '../checks.js';

const siteKey = async () => bytesToHex((await rollerSigner()).publicKey);
const withoutLast = (text) => {
  const lines = text.split('\n').filter(Boolean);
  return lines.slice(0, -1).join('\n') + '\n';
};

test('a closed battle signed by the pinned key: verified', async () => {
  const { text } = await makeExport();
  const report = await verifyExport(text, { rollerKeys: [await siteKey()], rules: null });
  assert.equal(verdictOf({ report }).kind, 'verified');
});

test('no trusted key: verified-unpinned, and its words are not the verified ones', async () => {
  const { text } = await makeExport();
  const report = await verifyExport(text, { rules: null });
  const verdict = verdictOf({ report });
  assert.equal(verdict.kind, 'verified-unpinned');
  for (const lang of ['en', 'ru']) {
    const { headline } = verdictTexts(verdict, lang);
    assert.notEqual(headline, STRINGS[lang]['verdict.verified']);
    assert.doesNotMatch(headline, lang === 'en' ? /^verified/i : /^проверено/i);
  }
  // A stranger's re-signed export, nothing pinned: the same, never verified.
  const stranger = await resign(text);
  assert.equal(verdictOf({ report: await verifyExport(stranger.text, { rules: null }) }).kind, 'verified-unpinned');
});

test('a die changed: failed at its version, by the dice check, both languages', async () => {
  const { text, rolls } = await makeExport();
  const at = rolls[0].version;
  const forged = (await changeDie(text, at)).text;
  const report = await verifyExport(forged, { rollerKeys: [await siteKey()], rules: null });
  const verdict = verdictOf({ report });
  assert.deepEqual([verdict.kind, verdict.version, verdict.check], ['failed', at, 'dice']);
  assert.match(verdictTexts(verdict, 'en').headline, new RegExp(`version ${at}: dice`));
  assert.match(verdictTexts(verdict, 'ru').headline, new RegExp(`версии ${at}: кости`));
});

test('a file that is not an export: not-an-export, never a broken log', () => {
  const verdict = verdictOf({ error: new ExportFormatError(1, 'not JSON') });
  assert.equal(verdict.kind, 'not-an-export');
  assert.doesNotMatch(verdictTexts(verdict, 'ru').headline + verdictTexts(verdict, 'ru').explanation, /не сходится/);
});

test('another key typed (a typo): key-mismatch, not chain or signature trouble', async () => {
  const { text } = await makeExport();
  const typo = (await siteKey()).replace(/.$/, (c) => (c === '0' ? '1' : '0'));
  const report = await verifyExport(text, { rollerKeys: [typo], rules: null });
  const verdict = verdictOf({ report });
  assert.equal(verdict.kind, 'key-mismatch');
  assert.match(verdictTexts(verdict, 'en').explanation, new RegExp(typo));
});

test('an export cut before its last event: cut-short, with and without the posted head', async () => {
  const { text } = await makeExport();
  const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const head = lines[lines.length - 1].hash;
  for (const options of [{}, { head }]) {
    const report = await verifyExport(withoutLast(text), { rollerKeys: [await siteKey()], rules: null, ...options });
    const verdict = verdictOf({ report });
    assert.equal(verdict.kind, 'cut-short', JSON.stringify(report.problems));
    assert.doesNotMatch(verdictTexts(verdict, 'en').headline, /commitment|seed/i);
  }
});

test('typed fields: "12345" and "abc" are input errors naming the field; 64 hex digits or nothing are fine', async () => {
  assert.equal(hexFieldProblem(''), null);
  assert.equal(hexFieldProblem('AB'.repeat(32)), null);
  assert.deepEqual(hexFieldProblem('12345'), { length: 5, text: '12345' });
  assert.equal(hexFieldProblem('abc').length, 3);
  const { text } = await makeExport();
  const report = await verifyExport(text, { rollerKeys: [await siteKey()], rules: null });
  const verdict = verdictOf({ report, inputError: { field: 'head', length: 3 } });
  assert.equal(verdict.kind, 'input-error');
  assert.match(verdictTexts(verdict, 'ru').headline, /Хеш головы/);
  assert.match(verdictTexts({ kind: 'input-error', field: 'roller-key', length: 5 }, 'en').headline, /roller key.*5 characters/);
  // A failing battle is still the bigger news.
  const forged = await verifyExport((await changeDie(text)).text, { rules: null });
  assert.equal(verdictOf({ report: forged, inputError: { field: 'head', length: 3 } }).kind, 'failed');
});

test('every verdict has its words in both languages', () => {
  for (const lang of ['en', 'ru']) {
    for (const kind of ['verified', 'verified-unpinned', 'unrevealed', 'not-an-export', 'key-mismatch', 'cut-short', 'input-error', 'failed-unchecked']) {
      assert.ok(STRINGS[lang][`verdict.${kind}`], `${lang} verdict.${kind}`);
      assert.ok(STRINGS[lang][`verdict.${kind}.why`], `${lang} verdict.${kind}.why`);
    }
    for (const check of ['dice', 'chain', 'commitments', 'signatures', 'outcomes', 'head', 'checkpoint', 'drawing']) assert.ok(STRINGS[lang][`why.${check}`], `${lang} why.${check}`);
  }
});
