// The /verify page: a judge chooses or drops an export file and it is
// verified entirely in this browser (no server call), then listed event by
// event and roll by roll and marked by the DOM contract (dom.js).
//
// battlelog-web inlines verify.js, dom.js and this file into one module
// script so that the page also works saved to disk (file:// cannot load
// modules from other files), dropping the imports below.
import { verifyExport } from '../verify.js';
import { applyError, applyReport } from '../dom.js';

/** An element with text: everything from the file goes in as text, never as HTML. */
function element(tag, text, attributes = {}) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

function describeDice(dice) {
  return dice
    .map((die) => {
      const marks = [!die.kept && 'dropped', die.rerolled && 'rerolled', die.exploded && 'exploded'].filter(Boolean);
      return `d${die.sides}:${die.value}${marks.length ? ` (${marks.join(', ')})` : ''}`;
    })
    .join(' ');
}

/** Lists the report's events, each with its rolls, into `results`. */
function listReport(results, report) {
  const rollsByVersion = new Map();
  for (const roll of report.rolls) rollsByVersion.set(roll.version, roll);
  const list = element('ol', undefined, { class: 'timeline' });
  for (const event of report.events) {
    const item = element('li', undefined, { 'data-version': event.version, id: `v${event.version}`, class: 'event' });
    item.append(element('span', `#v${event.version} ${event.type}`, { class: 'event-title' }));
    const summary = event.event && (event.event.summary_en || event.event.reason || event.event.text);
    if (summary) item.append(element('span', ` — ${summary}`, { class: 'summary' }));
    const roll = rollsByVersion.get(event.version);
    if (roll) {
      const dice = roll.recorded && roll.recorded.dice ? describeDice(roll.recorded.dice) : '';
      const total = roll.recorded && roll.recorded.total !== undefined ? ` = ${roll.recorded.total}` : '';
      item.append(
        element('div', `nonce ${roll.nonce}, epoch ${roll.epoch}: ${roll.expression} → ${dice}${total}`, {
          class: 'roll',
          'data-nonce': roll.nonce,
        }),
      );
    }
    if (event.problems.length > 0) {
      const problems = element('ul', undefined, { class: 'problems' });
      for (const problem of event.problems) problems.append(element('li', problem));
      item.append(problems);
    }
    list.append(item);
  }
  results.append(list);
}

async function verifyText(name, text) {
  document.body.setAttribute('data-audit', 'pending');
  const results = document.getElementById('results');
  results.replaceChildren(element('p', name, { class: 'file-name' }));
  const head = document.getElementById('head').value.trim() || undefined;
  try {
    const report = await verifyExport(text, { head });
    const problems = element('ul', undefined, { id: 'problems', class: 'problems' });
    for (const problem of report.problems) {
      problems.append(element('li', `v${problem.version} ${problem.check}: ${problem.message}`));
    }
    results.append(element('p', `${report.events.length} events, ${report.rolls.length} rolls; head hash ${report.headHash ?? ''}`), problems);
    listReport(results, report);
    applyReport(document, report);
  } catch (error) {
    results.append(element('p', String(error && error.message ? error.message : error), { class: 'error' }));
    applyError(document, error);
  }
}

async function verifyFile(file) {
  if (file) await verifyText(file.name, await file.text());
}

const input = document.getElementById('export-file');
input.addEventListener('change', () => verifyFile(input.files[0]));
const zone = document.getElementById('drop-zone');
zone.addEventListener('dragover', (event) => {
  event.preventDefault();
  zone.classList.add('over');
});
zone.addEventListener('dragleave', () => zone.classList.remove('over'));
zone.addEventListener('drop', (event) => {
  event.preventDefault();
  zone.classList.remove('over');
  verifyFile(event.dataTransfer.files[0]);
});
// A file chosen before the script ran (a slow load, a restored form).
if (input.files.length > 0) verifyFile(input.files[0]);
