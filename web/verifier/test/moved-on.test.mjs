// The battle page's script (pages/battle.js) when the battle moved on
// between the page and its export (the export is fetched apart, issue 39):
// the page was drawn at its first events, the export it reads holds three
// more. That is no cut-short export: the events after the page's head are
// drawn, the page's head follows the export's, and the live lines the
// export already held are not appended twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { verifyExport } from '../verify.js';
import { drawEvent } from '../pages/draw.js';
import { FakeDocument, h } from './fake-dom.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const lines = fs.readFileSync(path.join(here, 'fixtures', 'demo-pokemon-closed.jsonl'), 'utf8').trim().split('\n');
const DRAWN = 5;
const FETCHED = 8;

class FakeEventSource {
  static last = null;
  constructor(url) {
    this.url = url;
    this.listeners = {};
    FakeEventSource.last = this;
  }
  addEventListener(type, listener) {
    (this.listeners[type] ??= []).push(listener);
  }
  emit(type, data) {
    for (const l of this.listeners[type] ?? []) l({ data });
  }
  close() {}
}

async function until(condition, what) {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a page whose battle moved on before its export was read draws the rest, not a cut-short verdict', async () => {
  const drawn = await verifyExport(lines.slice(0, DRAWN).join('\n') + '\n', { rules: null });
  const doc = new FakeDocument('en');
  doc.body.setAttribute('data-status', 'open');
  doc.body.setAttribute('data-live-url', `/battles/b/live?after=${DRAWN - 1}`);
  doc.body.setAttribute('data-head', drawn.headHash);
  const timeline = h(doc, 'ol', { id: 'timeline' });
  const rollOf = new Map(drawn.rolls.map((r) => [r.version, r]));
  for (const e of drawn.events) timeline.append(drawEvent(doc, e.version, e.decoded.event, rollOf.get(e.version) ?? null, 'en'));
  doc.body.append(
    h(doc, 'link', { id: 'export-link', rel: 'alternate', type: 'application/x-ndjson', href: '/battles/b/export.jsonl' }),
    h(doc, 'section', { id: 'verification' }, h(doc, 'span', { id: 'first-failure' }), h(doc, 'ul', { id: 'checks' }), h(doc, 'ul', { id: 'client-problems' })),
    timeline,
    h(doc, 'script', { id: 'battle-export', type: 'application/x-ndjson' }),
  );
  const exported = lines.slice(0, FETCHED).join('\n') + '\n';
  const fetch = async () => ({ ok: true, status: 200, text: async () => exported });
  Object.assign(globalThis, { document: doc, location: { search: '' }, EventSource: FakeEventSource, fetch });

  await import('../pages/battle.js');
  await until(() => doc.body.getAttribute('data-audit') !== 'pending', 'the first verdict');
  assert.equal(doc.body.getAttribute('data-audit'), 'unrevealed', doc.getElementById('client-problems').textContent + doc.getElementById('first-failure').textContent);
  assert.equal(doc.querySelectorAll('.event').length, FETCHED, 'the events after the page drawn');
  assert.equal(doc.body.getAttribute('data-head'), JSON.parse(lines[FETCHED - 1]).hash);

  // The stream starts at the page: its first lines are the export's already.
  await until(() => FakeEventSource.last, 'the EventSource');
  for (const line of lines.slice(DRAWN)) FakeEventSource.last.emit('line', line);
  FakeEventSource.last.emit('closed', '');
  await until(() => doc.body.getAttribute('data-audit') === 'verified', 'verified after the close');
  assert.equal(doc.querySelectorAll('.event').length, lines.length);
  assert.equal(doc.getElementById('battle-export').textContent.trim().split('\n').length, lines.length, 'no line twice');
});
