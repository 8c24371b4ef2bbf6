// The battle page's script (pages/battle.js) on a stand-in document: the
// first events of a battle drawn (and served at the page's export link),
// the battle open; the rest of
// its lines arrive over a stand-in EventSource as the live endpoint sends
// them (`event: line`, then `event: closed`). Each is appended, drawn and
// the whole export verified again: unrevealed at first, verified once the
// close has revealed the seed. (No Worker under Node: the page verifies in
// its own thread, as a browser without workers does.)
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
const FIRST = 5;

class FakeEventSource {
  static last = null;
  constructor(url) {
    this.url = url;
    this.listeners = {};
    this.closed = false;
    FakeEventSource.last = this;
  }
  addEventListener(type, listener) {
    (this.listeners[type] ??= []).push(listener);
  }
  emit(type, data) {
    for (const l of this.listeners[type] ?? []) l({ data });
  }
  close() {
    this.closed = true;
  }
}

async function until(condition, what) {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('an open battle page follows its live lines, drawing and verifying each', async () => {
  const embedded = lines.slice(0, FIRST).join('\n') + '\n';
  const first = await verifyExport(embedded, { rules: null });
  const doc = new FakeDocument('en');
  doc.body.setAttribute('data-status', 'open');
  doc.body.setAttribute('data-live-url', '/battles/b/live?after=4');
  doc.body.setAttribute('data-head', first.headHash);
  const timeline = h(doc, 'ol', { id: 'timeline' });
  const rollOf = new Map(first.rolls.map((r) => [r.version, r]));
  for (const e of first.events) timeline.append(drawEvent(doc, e.version, e.decoded.event, rollOf.get(e.version) ?? null, 'en'));
  doc.body.append(
    h(doc, 'link', { id: 'export-link', rel: 'alternate', type: 'application/x-ndjson', href: '/battles/b/export.jsonl?k=key' }),
    h(doc, 'section', { id: 'verification' }, h(doc, 'span', { id: 'first-failure' }), h(doc, 'ul', { id: 'checks' }), h(doc, 'ul', { id: 'client-problems' })),
    timeline,
    h(doc, 'script', { id: 'battle-export', type: 'application/x-ndjson' }),
  );
  // The export is not in the page: the page reads it from the link (here in
  // its own thread: no Worker under Node), once.
  const fetched = [];
  const fetch = async (url) => {
    fetched.push(url);
    return { ok: true, status: 200, text: async () => embedded };
  };
  Object.assign(globalThis, { document: doc, location: { search: '' }, EventSource: FakeEventSource, fetch });

  await import('../pages/battle.js');
  await until(() => doc.body.getAttribute('data-audit') !== 'pending', 'the first verdict');
  assert.equal(doc.body.getAttribute('data-audit'), 'unrevealed');
  assert.deepEqual(fetched, ['/battles/b/export.jsonl?k=key']);
  await until(() => FakeEventSource.last, 'the EventSource');
  assert.equal(FakeEventSource.last.url, '/battles/b/live?after=4');

  for (const line of lines.slice(FIRST)) FakeEventSource.last.emit('line', line);
  FakeEventSource.last.emit('closed', '');
  await until(() => doc.body.getAttribute('data-audit') === 'verified', 'verified after the close');
  assert.equal(doc.querySelectorAll('.event').length, lines.length);
  assert.ok(doc.querySelectorAll('[data-nonce]').every((r) => r.getAttribute('data-check') === 'ok'));
  assert.ok(FakeEventSource.last.closed);
  assert.equal(doc.body.getAttribute('data-status'), 'closed');
  assert.equal(doc.body.getAttribute('data-head'), JSON.parse(lines.at(-1)).hash);
  assert.equal(doc.getElementById('battle-export').textContent.trim().split('\n').length, lines.length);
});
