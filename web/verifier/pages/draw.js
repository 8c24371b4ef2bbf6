// A plain drawing of one event by DOM contract v2, built with DOM calls and
// text only (nothing from an export is ever parsed as HTML): /verify lists
// a chosen export with it, and the battle page appends the events that
// arrive live with it. The server-drawn page is richer; this is the least
// that carries the contract's attributes, so that dom.js can check it.
import { t } from '../checks.js';

/** An element with text and attributes. */
export function element(doc, tag, text, attributes = {}) {
  const node = doc.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

// A recorded summary marks each die not counted (dropped, rerolled) the way
// a forum's Markdown does, `[~~2~~, 6, 4, 4]`: drawn as <s> elements built
// with the DOM, the marks never reach the page as text.
const STRUCK = /~~([^~\s]+?)~~/g;

/** `text` as text nodes and an <s> element for each struck die. */
export function summaryNodes(doc, text) {
  const nodes = [];
  let at = 0;
  for (const found of String(text).matchAll(STRUCK)) {
    if (found.index > at) nodes.push(text.slice(at, found.index));
    nodes.push(element(doc, 's', found[1]));
    at = found.index + found[0].length;
  }
  if (at < text.length) nodes.push(text.slice(at));
  return nodes;
}

/** An event's type in the page's language (`DiceRolled`: Roll, Бросок); an unknown one as it is. */
export function typeName(type, lang) {
  const name = t(lang, `type.${type}`);
  return name === `type.${type}` ? type : name;
}

// The field whose text is an event's summary (the contract's [data-summary]).
export function summaryField(type, lang) {
  return { ActionResolved: lang === 'ru' ? 'summary_ru' : 'summary_en', DisputeRaised: 'reason', JudgeRuling: 'text', BattleClosed: 'reason', BattleOpened: 'title' }[type] ?? null;
}

const FUDGE = new Map([[-1, '\u2212'], [0, ''], [1, '+']]);
const isFudge = (expression, die) => die.sides === 3 && /\d*d\s*f/i.test(expression ?? '') && die.value >= -1 && die.value <= 1;

const MARKS = {
  en: { dropped: 'dropped', rerolled: 'rerolled', exploded: 'exploded' },
  ru: { dropped: 'отброшен', rerolled: 'переброшен', exploded: 'взрыв' },
};

/** A roll: its dice in recorded order (each data-face, data-sides, .value), and its total. */
export function drawRoll(doc, roll, lang) {
  const { dice = [], total, error } = roll.recorded ?? {};
  const el = element(doc, 'div', undefined, { class: 'roll', 'data-nonce': roll.nonce, 'data-total': error ? '' : String(total) });
  el.append(element(doc, 'code', roll.expression, { class: 'expression' }), ' → ');
  for (const die of dice) {
    const fudge = isFudge(roll.expression, die);
    const marks = [!die.kept && 'dropped', die.rerolled && 'rerolled', die.exploded && 'exploded'].filter(Boolean);
    const d = element(doc, 'span', undefined, {
      class: `die${marks.map((m) => ` ${m}`).join('')}`, 'data-face': die.value, 'data-sides': die.sides, ...(fudge ? { 'data-fudge': '1' } : {}),
      title: `${fudge ? 'dF' : `d${die.sides}`}${marks.length ? ` (${marks.map((m) => MARKS[lang === 'ru' ? 'ru' : 'en'][m]).join(', ')})` : ''}`,
    });
    d.append(element(doc, 'span', fudge ? FUDGE.get(die.value) : String(die.value), { class: 'value' }));
    el.append(d, ' ');
  }
  el.append('= ', element(doc, 'b', error ? '' : String(total), { class: 'total' }));
  return el;
}

/**
 * One event: li.event#v<N>[data-version][data-type], its summary as
 * [data-summary] (the field it shows), its roll when it is one. `event` is
 * the readable or decoded event ({ type, ... }); `roll` a RollResult or null.
 */
export function drawEvent(doc, version, event, roll, lang) {
  const type = event ? event.type : 'unknown';
  const item = element(doc, 'li', undefined, { id: `v${version}`, class: 'event', 'data-version': version, 'data-type': type });
  item.append(element(doc, 'a', `#v${version}`, { href: `#v${version}`, class: 'event-link' }), ' ', element(doc, 'span', typeName(type, lang), { class: 'event-title' }));
  const field = summaryField(type, lang);
  if (field && event && typeof event[field] === 'string' && event[field] !== '') {
    const summary = element(doc, 'span', undefined, { 'data-summary': field, class: 'summary' });
    if (field.startsWith('summary_')) summary.append(...summaryNodes(doc, event[field]));
    else summary.textContent = event[field];
    item.append(' — ', summary);
  }
  if (roll) item.append(drawRoll(doc, roll, lang));
  return item;
}

/** The progress of a verification, in a <progress> inside `where` (made once). */
export function showProgress(doc, where, lang, done, total) {
  if (!where) return;
  let bar = where.querySelector('progress.verify-progress');
  if (!bar) {
    bar = element(doc, 'progress', undefined, { class: 'verify-progress' });
    where.append(bar);
  }
  bar.setAttribute('max', String(total));
  bar.setAttribute('value', String(done));
  bar.textContent = t(lang, 'progress', { done: Math.floor(done / 2), total: Math.floor(total / 2) });
  bar.hidden = done >= total;
}

/**
 * The "copy" button of the checkpoint to keep (button#copy-checkpoint):
 * copies pre#checkpoint-note's text exactly (a signed note must not gain or
 * lose a byte), with the Clipboard API where the page may use it, else by
 * selecting the text for the reader to copy. Sets data-copied="yes|select".
 */
export function wireCopyCheckpoint(doc) {
  const button = doc.getElementById('copy-checkpoint');
  const note = doc.getElementById('checkpoint-note');
  if (!button || !note) return;
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(note.textContent);
      button.setAttribute('data-copied', 'yes');
    } catch {
      const range = doc.createRange();
      range.selectNodeContents(note);
      const selection = doc.defaultView.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      button.setAttribute('data-copied', 'select');
    }
  });
}

/**
 * Checks a typed key or hash field (64 hex digits, or empty): marks the
 * input aria-invalid with a message naming the problem beside it, or
 * clears both. Returns { field, length } when it is malformed, else null.
 */
export function checkHexField(doc, input, field, lang, problemOf) {
  if (!input) return null;
  const problem = problemOf(input.value);
  const id = `${input.id}-error`;
  let message = doc.getElementById(id);
  if (!problem) {
    input.removeAttribute('aria-invalid');
    input.removeAttribute('aria-describedby');
    message?.remove();
    return null;
  }
  if (!message) {
    message = element(doc, 'span', undefined, { id, class: 'field-error', role: 'alert' });
    input.after(message);
  }
  message.textContent = `${t(lang, `field.${field}`)}: ${t(lang, 'field.invalid', { length: problem.length })}`;
  input.setAttribute('aria-invalid', 'true');
  input.setAttribute('aria-describedby', id);
  return { field, length: problem.length };
}

/**
 * An open battle's disputes panel (`#disputes`, issue 39) kept current as
 * events arrive live: a DisputeRaised adds an open dispute, a JudgeRuling
 * that names the dispute it answers (`answers_dispute`) marks it answered
 * and links the ruling; the counts follow. The words come from the panel's
 * `data-labels`, written by the server in the page's language. Events the
 * panel already shows are left alone.
 */
export function updateDisputes(doc, version, event) {
  const panel = doc.getElementById('disputes');
  const list = panel?.querySelector('ul.dispute-list');
  if (!panel || !list || !event) return;
  let labels;
  try {
    labels = JSON.parse(panel.getAttribute('data-labels') || '{}');
  } catch {
    return;
  }
  if (event.type === 'DisputeRaised' && !list.querySelector(`[data-dispute-version="${version}"]`)) {
    list.append(disputeItem(doc, version, event, labels));
  } else if (event.type === 'JudgeRuling' && Number.isSafeInteger(event.answers_dispute)) {
    const item = list.querySelector(`[data-dispute-version="${event.answers_dispute}"]`);
    if (item) markAnswered(doc, item, version, labels);
  } else {
    return;
  }
  const items = [...list.querySelectorAll('li.dispute')];
  const open = items.filter((li) => li.getAttribute('data-status') === 'open').length;
  const count = doc.getElementById('disputes-count');
  if (count) {
    count.removeAttribute('hidden');
    const openCount = count.querySelector('.open-count');
    const answeredCount = count.querySelector('.answered-count');
    if (openCount) openCount.textContent = String(open);
    if (answeredCount) answeredCount.textContent = String(items.length - open);
  }
  doc.getElementById('no-disputes')?.setAttribute('hidden', '');
}

function disputeItem(doc, version, event, labels) {
  const item = element(doc, 'li', undefined, { class: 'dispute', 'data-dispute-version': version, 'data-status': 'open' });
  const contested = doc.querySelector(`#v${event.refers_to} .event-title`)?.textContent ?? '';
  item.append(
    element(doc, 'strong', labels.dispute_open ?? '', { class: 'dispute-status' }), ' ',
    element(doc, 'a', `${labels.dispute ?? ''} #v${version}`, { class: 'dispute-link', href: `#v${version}` }),
    ` · ${labels.dispute_contests ?? ''} `,
    element(doc, 'a', `${contested} #v${event.refers_to}`.trim(), { class: 'contests', href: `#v${event.refers_to}` }),
    element(doc, 'br'),
    `${labels.dispute_raised_by ?? ''} `, element(doc, 'span', String(event.by ?? ''), { class: 'forum-text', translate: 'no' }),
    element(doc, 'br'),
    element(doc, 'span', labels.no_ruling_answers ?? '', { class: 'awaiting' }),
  );
  return item;
}

function markAnswered(doc, item, ruling, labels) {
  const link = element(doc, 'a', `${labels.ruling ?? ''} #v${ruling}`, { class: 'answer', href: `#v${ruling}` });
  const answers = [...item.querySelectorAll('a.answer')];
  if (answers.some((a) => a.getAttribute('href') === `#v${ruling}`)) return;
  if (answers.length > 0) {
    answers[answers.length - 1].after(', ', link);
  } else {
    item.querySelector('.awaiting')?.replaceWith(`${labels.answered_by ?? ''} `, link);
  }
  item.setAttribute('data-status', 'answered');
  const status = item.querySelector('.dispute-status');
  if (status) status.textContent = labels.dispute_answered ?? '';
}
