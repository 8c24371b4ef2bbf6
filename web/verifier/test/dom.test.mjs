// dom.js on a minimal stand-in for a Document: only the calls it makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { applyError, applyReport } from '../dom.js';
import { verifyExport } from '../verify.js';
import { makeExport } from '../tools/make-export.mjs';
import { changeDie } from '../tools/tamper.mjs';

class Element {
  constructor(attributes = {}) {
    this.attributes = { ...attributes };
    this.textContent = '';
  }
  getAttribute(name) {
    return name in this.attributes ? this.attributes[name] : null;
  }
  setAttribute(name, value) {
    this.attributes[name] = String(value);
  }
}

function page({ nonces, versions }) {
  const rolls = nonces.map((n) => new Element({ 'data-nonce': String(n) }));
  const events = versions.map((v) => new Element({ 'data-version': String(v) }));
  const first = new Element({ id: 'first-failure' });
  return {
    body: new Element({ 'data-audit': 'pending' }),
    rolls,
    events,
    first,
    querySelectorAll: (selector) => ({ '[data-nonce]': rolls, '[data-version]': events })[selector],
    getElementById: (id) => (id === 'first-failure' ? first : null),
  };
}

test('a verified battle: every roll ok, no first failure', async () => {
  const { text, lastVersion } = await makeExport();
  const doc = page({ nonces: [0, 1, 2], versions: [...Array(lastVersion + 1).keys()] });
  applyReport(doc, await verifyExport(text));
  assert.equal(doc.body.getAttribute('data-audit'), 'verified');
  assert.deepEqual(doc.rolls.map((r) => r.getAttribute('data-check')), ['ok', 'ok', 'ok']);
  assert.ok(doc.events.every((e) => e.getAttribute('data-check') === 'ok'));
  assert.equal(doc.first.textContent, '');
});

test('an open battle: rolls unrevealed', async () => {
  const doc = page({ nonces: [0, 1, 2], versions: [] });
  applyReport(doc, await verifyExport((await makeExport({ closed: false })).text));
  assert.equal(doc.body.getAttribute('data-audit'), 'unrevealed');
  assert.deepEqual(doc.rolls.map((r) => r.getAttribute('data-check')), ['unrevealed', 'unrevealed', 'unrevealed']);
});

test('a forged die: failed, the roll bad, the first failure shown; a roll the export lacks is bad', async () => {
  const { text, rolls } = await makeExport();
  const forged = await changeDie(text, rolls[1].version);
  const doc = page({ nonces: [0, 1, 2, 3], versions: [rolls[1].version] });
  applyReport(doc, await verifyExport(forged.text));
  assert.equal(doc.body.getAttribute('data-audit'), 'failed');
  assert.deepEqual(doc.rolls.map((r) => r.getAttribute('data-check')), ['ok', 'bad', 'ok', 'bad']);
  assert.equal(doc.events[0].getAttribute('data-check'), 'bad');
  assert.equal(doc.first.textContent, String(rolls[1].version));
});

test('input that is no export marks the page failed, saying why', () => {
  const doc = page({ nonces: [], versions: [] });
  applyError(doc, new Error('line 1: not JSON'));
  assert.equal(doc.body.getAttribute('data-audit'), 'failed');
  assert.equal(doc.body.getAttribute('data-audit-error'), 'line 1: not JSON');
});
