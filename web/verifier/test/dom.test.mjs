// dom.js on a small stand-in for a Document (fake-dom.mjs): the page drawn
// by DOM contract v2 from a real export, then changed the way a server or
// a proxy could change it in transit.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { applyError, applyReport } from '../dom.js';
import { verifyExport } from '../verify.js';
import { makeExport } from '../tools/make-export.mjs';
import { changeDie } from '../tools/tamper.mjs';
import { FakeDocument, h } from './fake-dom.mjs';

const FUDGE = new Map([[-1, '\u2212'], [0, ''], [1, '+']]);

/** A die as the contract draws it: data-face, data-sides, a .value (or pips). */
function drawDie(doc, die, { pips = false } = {}) {
  const fudge = die.sides === 3 && die.fudge;
  const el = h(doc, 'span', { class: 'die', 'data-face': String(die.value), 'data-sides': String(die.sides), ...(fudge ? { 'data-fudge': '1' } : {}) });
  if (pips) for (let i = 0; i < die.value; i++) el.append(h(doc, 'span', { class: 'pip' }));
  else el.append(h(doc, 'span', { class: 'value' }, fudge ? FUDGE.get(die.value) : String(die.value)));
  return el;
}

/** The battle page as PAGE and DICE draw it: every event, each roll nested in its own event. */
function drawPage(report, { lang = 'en', pips = false, nestRolls = false } = {}) {
  const doc = new FakeDocument(lang);
  const timeline = h(doc, 'ol', { id: 'timeline' });
  const verification = h(doc, 'section', { id: 'verification' },
    h(doc, 'span', { id: 'first-failure' }), h(doc, 'ul', { id: 'checks' }), h(doc, 'code', { id: 'roller-key' }),
    h(doc, 'span', { id: 'roller-key-status' }), h(doc, 'ul', { id: 'client-problems' }));
  doc.body.append(verification, timeline);
  const rollOf = new Map(report.rolls.map((r) => [r.version, r]));
  let lastAction = null;
  for (const e of report.events) {
    const ev = e.decoded.event;
    const el = h(doc, 'li', { id: `v${e.version}`, class: 'event', 'data-version': String(e.version), 'data-type': e.type });
    const field = { ActionResolved: lang === 'ru' ? 'summary_ru' : 'summary_en', DisputeRaised: 'reason', JudgeRuling: 'text', BattleClosed: 'reason', BattleOpened: 'title' }[e.type];
    if (field && ev[field]) el.append(h(doc, 'p', { 'data-summary': field }, `  ${ev[field]}\n `));
    const roll = rollOf.get(e.version);
    if (roll) {
      const dice = roll.recorded.dice;
      el.append(h(doc, 'div', { class: 'roll', 'data-nonce': String(roll.nonce), 'data-total': roll.recorded.error ? '' : String(roll.recorded.total) },
        ...dice.map((d) => drawDie(doc, d, { pips: pips && d.sides === 6 })), ' = ', h(doc, 'b', { class: 'total' }, String(roll.recorded.total))));
    }
    if (nestRolls && e.type === 'ActionResolved' && lastAction) lastAction.append(el);
    else timeline.append(el);
    if (e.type === 'ActionResolved') lastAction = el;
  }
  return doc;
}

const rollEl = (doc, nonce) => doc.querySelector(`[data-nonce="${nonce}"]`);
const eventEl = (doc, version) => doc.getElementById(`v${version}`);

test('a page drawn as verified: verified, every mark ok, every check listed with counts', async () => {
  const { text } = await makeExport();
  const report = await verifyExport(text, { rules: null });
  const doc = drawPage(report);
  const marked = applyReport(doc, report);
  assert.equal(doc.body.getAttribute('data-audit'), 'verified', JSON.stringify(marked.problems));
  assert.ok(doc.querySelectorAll('[data-nonce]').every((r) => r.getAttribute('data-check') === 'ok'));
  assert.ok(doc.querySelectorAll('.event').every((e) => e.getAttribute('data-check') === 'ok'));
  assert.equal(doc.getElementById('first-failure').textContent, '');
  const checks = doc.querySelectorAll('[data-check-name]').map((li) => [li.getAttribute('data-check-name'), li.getAttribute('data-check')]);
  assert.deepEqual(checks, [['dice', 'ok'], ['chain', 'ok'], ['commitments', 'ok'], ['signatures', 'ok'], ['outcomes', 'skipped'], ['head', 'skipped'], ['checkpoint', 'skipped'], ['drawing', 'ok']]);
  const dice = report.rolls.reduce((n, r) => n + r.recorded.dice.length, 0);
  assert.equal(doc.querySelector('[data-check-name="dice"]').textContent, `Dice re-derived: 3 rolls, ${dice} dice`);
  assert.match(doc.querySelector('[data-check-name="drawing"]').textContent, new RegExp(`3 rolls, ${dice} dice, 5 summaries`));
  assert.equal(doc.body.getAttribute('data-roller-key'), 'unpinned');
  assert.equal(doc.getElementById('roller-key').textContent, report.rollerKey);
  // Each event says its verdict in words, not colour alone.
  assert.equal(eventEl(doc, 1).querySelector('.check-text').textContent, 'verified');
});

for (const [what, change] of [
  ['one die’s visible face', (doc, nonce) => { const v = rollEl(doc, nonce).querySelector('.value'); v.textContent = String(Number(v.textContent) % 6 + 1); }],
  ['one die’s data-face', (doc, nonce) => { const d = rollEl(doc, nonce).querySelector('[data-face]'); d.setAttribute('data-face', String(Number(d.getAttribute('data-face')) % 6 + 1)); }],
  ['a die left out', (doc, nonce) => { const r = rollEl(doc, nonce); r.children.splice(r.children.indexOf(r.querySelector('[data-face]')), 1); }],
  ['the data-total', (doc, nonce) => rollEl(doc, nonce).setAttribute('data-total', '99')],
  ['the total shown', (doc, nonce) => { rollEl(doc, nonce).querySelector('.total').textContent = '99'; }],
]) {
  test(`${what} changed in transit: the roll and its event bad, failed at that version`, async () => {
    const { text, rolls } = await makeExport();
    const report = await verifyExport(text, { rules: null });
    const doc = drawPage(report);
    change(doc, rolls[1].nonce);
    applyReport(doc, report);
    assert.equal(doc.body.getAttribute('data-audit'), 'failed');
    assert.equal(doc.getElementById('first-failure').textContent, String(rolls[1].version));
    assert.deepEqual(doc.querySelectorAll('[data-nonce]').map((r) => r.getAttribute('data-check')), ['ok', 'bad', 'ok']);
    assert.equal(eventEl(doc, rolls[1].version).getAttribute('data-check'), 'bad');
    assert.equal(eventEl(doc, rolls[0].version).getAttribute('data-check'), 'ok');
    assert.equal(doc.querySelector('[data-check-name="drawing"]').getAttribute('data-check'), 'bad');
    assert.equal(doc.querySelector('[data-check-name="dice"]').getAttribute('data-check'), 'ok', 'the log itself is fine');
    const problem = doc.getElementById('client-problems').querySelector('li');
    assert.equal(problem.querySelector('a').getAttribute('href'), `#v${rolls[1].version}`);
  });
}

test('a summary changed in transit ("crit ×2, 180 damage"): its event bad, failed at that version', async () => {
  const { text, rolls } = await makeExport();
  const report = await verifyExport(text, { rules: null });
  const doc = drawPage(report);
  const action = rolls[0].version + 1;
  eventEl(doc, action).querySelector('[data-summary]').textContent = 'pikachu → meowth: crit ×2, 180 damage';
  applyReport(doc, report);
  assert.equal(doc.body.getAttribute('data-audit'), 'failed');
  assert.equal(doc.getElementById('first-failure').textContent, String(action));
  assert.equal(eventEl(doc, action).getAttribute('data-check'), 'bad');
  assert.equal(eventEl(doc, action).querySelector('.check-text').textContent, 'failed');
});

test('a summary naming a field the record does not hold, or two summaries, fail', async () => {
  const { text } = await makeExport();
  const report = await verifyExport(text, { rules: null });
  for (const change of [
    (el) => el.querySelector('[data-summary]').setAttribute('data-summary', 'summary_de'),
    (el) => el.append(h(el.ownerDocument, 'p', { 'data-summary': 'summary_en' }, 'again')),
  ]) {
    const doc = drawPage(report);
    change(eventEl(doc, 2));
    applyReport(doc, report);
    assert.equal(doc.getElementById('first-failure').textContent, '2');
  }
});

test('a die drawn outside any roll fails at the event that shows it', async () => {
  const { text } = await makeExport();
  const report = await verifyExport(text, { rules: null });
  const doc = drawPage(report);
  eventEl(doc, 2).append(h(doc, 'span', { 'data-face': '20', 'data-sides': '20' }, h(doc, 'span', { class: 'value' }, '20')));
  applyReport(doc, report);
  assert.equal(doc.body.getAttribute('data-audit'), 'failed');
  assert.equal(doc.getElementById('first-failure').textContent, '2');
});

test('whitespace in a summary is collapsed, and a nested event’s summary is its own', async () => {
  const { text } = await makeExport();
  const report = await verifyExport(text, { rules: null });
  const doc = drawPage(report, { nestRolls: true });
  // The rolls' events (and their actions) are nested inside earlier actions.
  assert.ok(eventEl(doc, 4).parentElement.classList.contains('event'), 'drawn nested');
  applyReport(doc, report);
  assert.equal(doc.body.getAttribute('data-audit'), 'verified');
});

test('dice drawn as pips are counted', async () => {
  const { text, rolls } = await makeExport();
  const report = await verifyExport(text, { rules: null });
  const doc = drawPage(report, { pips: true });
  assert.ok(rollEl(doc, 0).querySelector('.pip'));
  applyReport(doc, report);
  assert.equal(doc.body.getAttribute('data-audit'), 'verified');
  const doc2 = drawPage(report, { pips: true });
  const die = rollEl(doc2, rolls[0].nonce).querySelector('[data-face]');
  die.append(h(doc2, 'span', { class: 'pip' }));
  applyReport(doc2, report);
  assert.equal(doc2.getElementById('first-failure').textContent, String(rolls[0].version));
});

test('fudge dice: − for −1, nothing for 0, + for +1; anything else fails', () => {
  const dice = [-1, 0, 1, -1].map((value) => ({ sides: 3, value, kept: true, rerolled: false, exploded: false, fudge: true }));
  const report = {
    status: 'verified', firstFailure: null, problems: [], commitments: [], rollerKey: null, rollerKeyStatus: 'unpinned', outcomes: null, head: null,
    events: [{ version: 0, type: 'DiceRolled', check: 'ok', problems: [], decoded: { event: { type: 'DiceRolled' } } }],
    rolls: [{ version: 0, nonce: 0, check: 'ok', problems: [], recorded: { dice, total: -1, error: null }, derived: { dice, total: -1, error: null } }],
  };
  const doc = drawPage(report);
  assert.deepEqual(doc.querySelectorAll('.value').map((v) => v.textContent), ['\u2212', '', '+', '\u2212']);
  applyReport(doc, report);
  assert.equal(doc.body.getAttribute('data-audit'), 'verified');
  for (const shown of ['-1', '0', '1', '-']) {
    const forged = drawPage(report);
    forged.querySelectorAll('.value')[0].textContent = shown;
    applyReport(forged, report);
    assert.equal(forged.body.getAttribute('data-audit'), 'failed', `${shown} drawn for −1`);
  }
});

test('a forged die in the log: failed at the roll; a roll or event the export lacks is bad', async () => {
  const { text, rolls } = await makeExport();
  const forged = await changeDie(text, rolls[1].version);
  const report = await verifyExport(forged.text, { rules: null });
  const doc = drawPage(report);
  doc.body.append(h(doc, 'div', { class: 'roll', 'data-nonce': '7' }), h(doc, 'li', { class: 'event', 'data-version': '70' }));
  applyReport(doc, report);
  assert.equal(doc.body.getAttribute('data-audit'), 'failed');
  assert.deepEqual(doc.querySelectorAll('[data-nonce]').map((r) => r.getAttribute('data-check')), ['ok', 'bad', 'ok', 'bad']);
  assert.equal(doc.querySelector('[data-version="70"]').getAttribute('data-check'), 'bad');
  assert.equal(doc.getElementById('first-failure').textContent, String(rolls[1].version));
  assert.equal(doc.querySelector('[data-check-name="dice"]').getAttribute('data-check'), 'bad');
});

test('a Russian page: the checks and the problem lines in Russian, linked to their version', async () => {
  const { text, rolls } = await makeExport();
  const report = await verifyExport(text, { rules: null, rollerKeys: ['00'.repeat(32)] });
  const doc = drawPage(report, { lang: 'ru' });
  applyReport(doc, report);
  assert.equal(doc.body.getAttribute('data-roller-key'), 'mismatch');
  assert.equal(doc.body.getAttribute('data-audit'), 'failed');
  assert.match(doc.querySelector('[data-check-name="dice"]').textContent, /^Кости пересчитаны: 3 броска, \d+ (кость|кости|костей)$/);
  assert.match(doc.querySelector('[data-check-name="signatures"]').textContent, /^Подписи:/);
  assert.equal(doc.getElementById('roller-key-status').textContent, 'НЕ доверенный ключ роллера');
  const problem = doc.getElementById('client-problems').querySelector('li');
  assert.equal(problem.querySelector('a').getAttribute('href'), '#v0');
  assert.match(problem.textContent, /^v0 подписи: /);
  assert.equal(eventEl(doc, rolls[0].version).querySelector('.check-text').textContent, 'проверено');
});

test('input that is no export marks the page failed, saying why', () => {
  const doc = new FakeDocument();
  doc.body.append(h(doc, 'span', { id: 'first-failure' }, '3'));
  applyError(doc, new Error('line 1: not JSON'));
  assert.equal(doc.body.getAttribute('data-audit'), 'failed');
  assert.equal(doc.body.getAttribute('data-audit-error'), 'line 1: not JSON');
  assert.equal(doc.getElementById('first-failure').textContent, '');
});

// Review of issue 21: no way to draw past the check by leaving a mark out.
for (const [what, change, at] of [
  ['a roll the export does not hold, drawn inside an event', (doc) => eventEl(doc, 2).append(
    h(doc, 'div', { class: 'roll', 'data-nonce': '424242', 'data-total': '18' }, h(doc, 'b', { class: 'total' }, '18'))), () => 2],
  ['a roll drawn without its data-total', (doc, rolls) => rollEl(doc, rolls[1].nonce).removeAttribute('data-total'), (rolls) => rolls[1].version],
  ['an action whose summary is drawn without [data-summary]', (doc) => eventEl(doc, 2).querySelector('[data-summary]').removeAttribute('data-summary'), () => 2],
  ['a die with a second .value', (doc, rolls) => rollEl(doc, rolls[1].nonce).querySelector('[data-face]').append(h(doc, 'span', { class: 'value' }, '6')), (rolls) => rolls[1].version],
  ['a die whose accessible name says another face', (doc, rolls) => {
    const die = rollEl(doc, rolls[1].nonce).querySelector('[data-face]');
    die.setAttribute('aria-label', `d${die.getAttribute('data-sides')}: ${Number(die.getAttribute('data-face')) % 6 + 1}`);
  }, (rolls) => rolls[1].version],
]) {
  test(`${what}: the page fails at that version`, async () => {
    const { text, rolls } = await makeExport();
    const report = await verifyExport(text, { rules: null });
    const doc = drawPage(report);
    change(doc, rolls);
    applyReport(doc, report);
    assert.equal(doc.body.getAttribute('data-audit'), 'failed');
    assert.equal(doc.getElementById('first-failure').textContent, String(at(rolls)));
  });
}

test('a die whose accessible name says its own face (fudge − included) passes', async () => {
  const { text, rolls } = await makeExport();
  const report = await verifyExport(text, { rules: null });
  const doc = drawPage(report);
  for (const die of doc.querySelectorAll('[data-face]')) die.setAttribute('aria-label', `d6: ${die.getAttribute('data-face').replace('-', '\u2212')}, dropped`);
  applyReport(doc, report);
  assert.equal(doc.body.getAttribute('data-audit'), 'verified');
  assert.ok(rolls.length > 0);
});

test("the checkpoint shown to keep must be the trailer's, and the log key is written with its status", async () => {
  const { makeTrailer, logKey, lastEvent } = await import('../tools/make-trailer.mjs');
  const { text } = await makeExport();
  const key = await logKey();
  const trailer = await makeTrailer(lastEvent(text), key);
  const withTrailer = `${text}${JSON.stringify(trailer)}\n`;
  const report = await verifyExport(withTrailer, { rules: null, logKeys: [key.verifierKey] });
  const page = (note) => {
    const doc = drawPage(report, { lang: 'ru' });
    doc.body.append(h(doc, 'code', { id: 'log-key' }), h(doc, 'span', { id: 'log-key-status' }), h(doc, 'pre', { id: 'checkpoint-note' }, note));
    return doc;
  };
  const good = page(trailer.checkpoint);
  const marked = applyReport(good, report);
  assert.equal(good.body.getAttribute('data-audit'), 'verified', JSON.stringify(marked.problems));
  assert.equal(good.body.getAttribute('data-log-key'), 'pinned');
  assert.equal(good.getElementById('log-key').textContent, key.verifierKey);
  assert.equal(good.getElementById('log-key-status').textContent, 'доверенный ключ журнала (закреплён)');
  assert.match(good.querySelector('[data-check-name="checkpoint"]').textContent, /^Подписанный чекпойнт: последнее событие/);
  // Another note shown (one byte changed): the drawing fails where the export ends.
  const other = page(trailer.checkpoint.replace('\n6\n', '\n5\n'));
  const bad = applyReport(other, report);
  assert.equal(other.body.getAttribute('data-audit'), 'failed');
  assert.equal(bad.firstFailure, report.events.at(-1).version + 1);
  assert.match(bad.problems[0].message, /not the one the trailer holds/);
  // No trailer: no key, and a note shown anyway fails.
  const plain = await verifyExport(text, { rules: null });
  const doc = drawPage(plain);
  doc.body.append(h(doc, 'pre', { id: 'checkpoint-note' }, trailer.checkpoint));
  assert.equal(applyReport(doc, plain).status, 'failed');
  assert.equal(doc.body.getAttribute('data-log-key'), 'none');
});

test('a die not counted (~~2~~ in the record) drawn as <s> checks; struck differently, or not at all, fails', async () => {
  const { text, rolls } = await makeExport();
  const action = rolls[0].version + 1;
  const recorded = 'pikachu: 4d6kh3: [~~2~~, 6, 4, 4] = 14';
  const cases = [
    [['pikachu: 4d6kh3: [', 's:2', ', 6, 4, 4] = 14'], 'verified'],
    [['pikachu: 4d6kh3: [', 'del:2', ', 6, 4, 4] = 14'], 'verified'],
    [['pikachu: 4d6kh3: [', 's:6', ', 2, 4, 4] = 14'], 'failed'],
    [['pikachu: 4d6kh3: [2, 6, 4, 4] = 14'], 'failed'],
  ];
  for (const [parts, want] of cases) {
    const report = await verifyExport(text, { rules: null });
    report.events.find((e) => e.version === action).decoded.event.summary_en = recorded;
    const doc = drawPage(report);
    const nodes = parts.map((p) => (/^(s|del):/.test(p) ? h(doc, p.split(':')[0], {}, p.split(':')[1]) : p));
    eventEl(doc, action).querySelector('[data-summary]').replaceChildren(...nodes);
    applyReport(doc, report);
    assert.equal(doc.body.getAttribute('data-audit'), want, JSON.stringify(parts));
  }
});

// On a Russian page every reason is Russian (issue 39, finding 4: "v29
// кости: die 1: value 1 recorded, 6 re-derived", "drawn with data-face 1"):
// the text of the problems, the verdict and the checks holds no English
// word; values (hashes, JSON, field names) are code.
const LATIN_WORD = /[A-Za-z]{2,}/;
/** The text of `el` outside <code>, and of each child in turn. */
function wordsOf(el) {
  if (el.tagName === 'CODE') return '';
  return [el.text, ...el.children.map((child) => (typeof child === 'string' ? child : wordsOf(child)))].join(' ');
}

for (const [what, forge, change] of [
  ['a die changed in the export', async (text, rolls) => (await changeDie(text, rolls[1].version)).text, null],
  ['a face changed in transit', null, (doc, nonce) => { rollEl(doc, nonce).querySelector('[data-face]').setAttribute('data-face', '1'); }],
  ['a total changed in transit', null, (doc, nonce) => { rollEl(doc, nonce).querySelector('.total').textContent = '99'; }],
]) {
  test(`${what}: on a Russian page the reasons are Russian`, async () => {
    const made = await makeExport();
    const text = forge ? await forge(made.text, made.rolls) : made.text;
    const report = await verifyExport(text, { rules: null });
    const doc = drawPage(report, { lang: 'ru' });
    if (change) change(doc, made.rolls[1].nonce);
    applyReport(doc, report);
    const items = doc.getElementById('client-problems').querySelectorAll('li');
    assert.ok(items.length > 0, 'a problem is listed');
    for (const item of items) {
      const words = wordsOf(item);
      assert.doesNotMatch(words, LATIN_WORD, `an English word in ${JSON.stringify(words)}`);
    }
    for (const check of doc.getElementById('checks').querySelectorAll('li')) {
      assert.doesNotMatch(wordsOf(check).replace(/\b[0-9a-f]{64}\b/g, ''), LATIN_WORD, check.textContent);
    }
    const title = rollEl(doc, made.rolls[1].nonce).getAttribute('title') ?? '';
    assert.doesNotMatch(title.replace(/d\d+/g, ''), LATIN_WORD, `the roll's title ${JSON.stringify(title)}`);
  });
}
