// The /verify page: a judge chooses or drops an export file and it is
// verified entirely in this browser (no server call, in a Web Worker), then
// listed event by event (summary, reason or ruling text, each roll with its
// dice) and marked by DOM contract v2 (dom.js). Idle until a file is chosen.
//
// The trusted roller key: typed in #roller-key-input, or ?roller_key=, else
// the site's own keys (#roller-keys, when the page is served by a site that
// publishes them). The journal's log key (docs/protocol.md §5) likewise:
// #log-key-input, or ?log_key=, else the site's (#log-keys). The posted
// head: #posted-head (or #head), or ?head=. A file with a trailer shows its
// signed checkpoint to keep (section#checkpoint, pre#checkpoint-note).
import { applyError, applyReport, writeVerdict } from '../dom.js';
import { pageLanguage, t } from '../checks.js';
import { prewarm, verifyOffThread } from '../client.js';
import { hexFieldProblem } from '../verdict.js';
import { checkHexField, drawEvent, element, showProgress, wireCopyCheckpoint } from './draw.js';
import { messageText, segments } from '../messages.js';

const params = new URLSearchParams(location.search);
// The offline page (pages/offline.html) has no server to choose its
// language: ?lang= does, and its labels are filled from checks.js.
if (document.body.hasAttribute('data-offline')) {
  const asked = params.get('lang');
  if (asked) document.documentElement.setAttribute('lang', pageLanguage(asked));
  const offlineLang = pageLanguage(document.documentElement.getAttribute('lang'));
  for (const el of document.querySelectorAll('[data-t]')) el.textContent = t(offlineLang, el.getAttribute('data-t'));
  document.title = t(offlineLang, 'offline.title');
}
const lang = pageLanguage(document.documentElement.getAttribute('lang'));

function siteKeys(id = 'roller-keys') {
  const el = document.getElementById(id);
  if (!el) return [];
  try {
    const keys = JSON.parse(el.textContent).keys;
    return Array.isArray(keys) ? keys.filter((k) => typeof k === 'string') : [];
  } catch {
    return [];
  }
}

const keyInput = document.getElementById('roller-key-input');
const logKeyInput = document.getElementById('log-key-input');
if (logKeyInput && !logKeyInput.value) logKeyInput.value = params.get('log_key') || '';
const headInput = document.getElementById('posted-head') || document.getElementById('head');
if (keyInput && !keyInput.value) keyInput.value = params.get('roller_key') || '';
if (headInput && !headInput.value) headInput.value = params.get('head') || '';

// A malformed typed key is left out (and said so by name), never used:
// a typo must not read as a battle signed by the wrong key.
function typedKey() {
  const typed = (keyInput ? keyInput.value : params.get('roller_key') || '').trim();
  return hexFieldProblem(typed) ? '' : typed;
}

function trustedKeys() {
  const typed = typedKey();
  return typed ? [typed] : siteKeys();
}

/** The first malformed field the judge typed, named; null when none. */
function inputError() {
  const key = checkHexField(document, keyInput, 'roller-key', lang, hexFieldProblem);
  const head = checkHexField(document, headInput, 'head', lang, hexFieldProblem);
  return key ?? head;
}

function trustedLogKeys() {
  const typed = (logKeyInput ? logKeyInput.value : params.get('log_key') || '').trim();
  return typed ? [typed] : siteKeys('log-keys');
}

/** The trailer's signed checkpoint shown to keep, or the section hidden. */
function showCheckpoint(report) {
  const section = document.getElementById('checkpoint');
  const note = document.getElementById('checkpoint-note');
  if (!section || !note) return;
  // Only a checkpoint that checked under a pinned key is worth keeping: one
  // signed by an unknown or wrong key would hold the judge to nothing.
  const trailer = report ? report.trailer : null;
  const verified = trailer && trailer.check === 'ok' && trailer.keyStatus === 'pinned' && trailer.checkpoint ? trailer.checkpoint.note : '';
  note.textContent = verified;
  if (verified) section.removeAttribute('hidden');
  else section.setAttribute('hidden', '');
}

/** Lists the report's events, each with its summary and roll, into `results`. */
function listReport(results, report) {
  const rollsByVersion = new Map(report.rolls.map((roll) => [roll.version, roll]));
  const list = element(document, 'ol', undefined, { class: 'timeline', id: 'timeline' });
  for (const event of report.events) {
    // The record's event (decoded, what was hashed), never the line's.
    const item = drawEvent(document, event.version, event.decoded ? event.decoded.event : { type: event.type }, rollsByVersion.get(event.version) ?? null, lang);
    if (event.problems.length > 0) {
      // Each reason in the page's language (messages.js), values as code.
      const problems = element(document, 'ul', undefined, { class: 'problems' });
      for (const problem of event.problems) {
        const li = element(document, 'li');
        for (const part of segments(messageText(problem, lang) ?? problem)) {
          li.append(part.code ? element(document, 'code', part.text) : part.text);
        }
        problems.append(li);
      }
      item.append(problems);
    }
    list.append(item);
  }
  results.append(list);
}

let current = null; // { name, text } of the file chosen last

async function verifyText(name, text) {
  current = { name, text };
  document.body.setAttribute('data-audit', 'pending');
  document.body.setAttribute('data-roller-key', 'pending');
  document.body.removeAttribute('data-audit-error');
  const results = document.getElementById('results');
  // The file's name is the judge's own, never translated.
  results.replaceChildren(element(document, 'p', name, { class: 'file-name forum-text', translate: 'no' }));
  const typedError = inputError();
  const head = headInput && !hexFieldProblem(headInput.value) ? headInput.value.trim() || undefined : undefined;
  writeVerdict(document, { kind: 'pending' }, lang);
  showCheckpoint(null);
  try {
    const report = await verifyOffThread(text, { head, rollerKeys: trustedKeys(), logKeys: trustedLogKeys() }, (done, total) => showProgress(document, results, lang, done, total));
    if (current.text !== text) return; // another file was chosen meanwhile
    showProgress(document, results, lang, 1, 1);
    const counts = element(document, 'p', `${report.events.length} · ${report.rolls.length} · `, { class: 'counts' });
    counts.append(element(document, 'code', report.headHash ?? ''));
    results.append(counts);
    listReport(results, report);
    showCheckpoint(report);
    applyReport(document, report, { inputError: typedError });
  } catch (error) {
    showProgress(document, results, lang, 1, 1);
    const message = String(error && error.message ? error.message : error);
    results.append(element(document, 'p', error && error.name === 'ExportFormatError' ? t(lang, 'error.notExport', { message }) : message, { class: 'error' }));
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
// A changed key or head checks the chosen file again (and a malformed one
// is named at once, file or not).
for (const field of [keyInput, logKeyInput, headInput]) {
  field?.addEventListener('change', () => {
    if (current) verifyText(current.name, current.text);
    else if (inputError() === null) writeVerdict(document, { kind: 'idle' }, lang);
    else writeVerdict(document, { kind: 'input-error', ...inputError() }, lang);
  });
}
if (inputError() !== null) writeVerdict(document, { kind: 'input-error', ...inputError() }, lang);
wireCopyCheckpoint(document);
// The worker loads its modules now, not once a file is chosen.
prewarm();
// A file chosen before the script ran (a slow load, a restored form).
if (input.files.length > 0) verifyFile(input.files[0]);
