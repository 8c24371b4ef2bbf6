// The battle page's own check (battlelog-web's /battles/{id}): verifies the
// export the server embedded in the page with the independent verifier, in
// a Web Worker, then compares what the page draws with what was verified
// and marks it by DOM contract v2 (dom.js). The server's word is not
// trusted: the embedded text is the same export `export.jsonl` serves, and
// every die of every roll, every roll's total and every event's summary on
// the page must be backed by it (the server's explanations are not compared).
//
// Inputs on the page: #battle-export (the export and its §5 trailer),
// #roller-keys (the roller keys the site trusts, JSON), #log-keys (the
// journal's log key the site publishes, JSON: the trailer's is pinned to it), input#posted-head (the head the forum
// posted; ?head= pre-fills it), body[data-head] (the head the server says
// the battle is at). An open battle (body[data-status="open"]) follows
// body[data-live-url] with an EventSource: each new line is appended to the
// export, drawn, and the whole export verified again.
import { applyError, applyReport } from '../dom.js';
import { pageLanguage } from '../checks.js';
import { prewarm, verifyOffThread } from '../client.js';
import { hexFieldProblem } from '../verdict.js';
import { checkHexField, drawEvent, showProgress, updateDisputes, wireCopyCheckpoint } from './draw.js';

const lang = pageLanguage(document.documentElement.getAttribute('lang'));
const exportElement = document.getElementById('battle-export');
let exportText = exportElement.textContent;

function trustedKeys(id = 'roller-keys') {
  const el = document.getElementById(id);
  if (!el) return [];
  try {
    const keys = JSON.parse(el.textContent).keys;
    return Array.isArray(keys) ? keys.filter((k) => typeof k === 'string') : [];
  } catch {
    return [];
  }
}

// A malformed head (typed, or ?head=) is an input error named at the
// field, never a failed battle: it is left out of the check.
function postedHead() {
  const input = document.getElementById('posted-head');
  const typed = input ? input.value.trim() : new URLSearchParams(location.search).get('head') || '';
  return typed && !hexFieldProblem(typed) ? typed : undefined;
}

let running = null; // the verification under way
let again = false; // something changed while it ran: run once more after

// Set once a live event is appended: the export then goes past the head its
// trailer was signed at, so it has none, and that is no finding.
let liveMoved = false;

async function check() {
  if (running) {
    again = true;
    return running;
  }
  running = (async () => {
    const section = document.getElementById('verification');
    // Timings for the benchmark (web/browser-tests/bench_page.py).
    performance.mark('battlelog-verify-start');
    try {
      const report = await verifyOffThread(exportText, { head: postedHead(), rollerKeys: trustedKeys(), logKeys: trustedKeys('log-keys'), requireTrailer: liveMoved ? false : undefined }, (done, total) =>
        showProgress(document, section, lang, done, total),
      );
      // The head the server says the battle is at must be the export's end:
      // a page whose embedded export was cut short fails there.
      const serverHead = document.body.getAttribute('data-head');
      if (serverHead && report.headHash && serverHead.toLowerCase() !== report.headHash.toLowerCase()) {
        const last = report.events.length > 0 ? report.events[report.events.length - 1].version : -1;
        report.problems.push({ version: last + 1, check: 'head', cutShort: true, message: `the page says the battle is at head ${serverHead}, its export ends at ${report.headHash}` });
        report.status = 'failed';
      }
      performance.mark('battlelog-report', { detail: report.timing ?? null });
      const inputError = checkHexField(document, document.getElementById('posted-head'), 'head', lang, hexFieldProblem);
      applyReport(document, report, { inputError });
      performance.mark('battlelog-marked');
    } catch (error) {
      applyError(document, error);
    } finally {
      showProgress(document, section, lang, 1, 1);
    }
  })();
  await running;
  running = null;
  if (again) {
    again = false;
    await check();
  }
}

// --- Live: an open battle follows its new events ------------------------
let live = null;

/** The export without its §5 trailer line (the last line, without a version), and the page without its checkpoint to keep. */
function withoutTrailer(text) {
  const lines = text.replace(/\s*$/, '').split('\n');
  let last = null;
  try {
    last = JSON.parse(lines[lines.length - 1]);
  } catch {
    last = null;
  }
  if (last && typeof last === 'object' && !('version' in last)) {
    lines.pop();
    const note = document.getElementById('checkpoint-note');
    if (note) note.textContent = '';
    document.getElementById('checkpoint')?.setAttribute('hidden', '');
  }
  return lines.join('\n');
}

function followLive() {
  const url = document.body.getAttribute('data-live-url');
  if (document.body.getAttribute('data-status') !== 'open' || !url || typeof EventSource === 'undefined') return;
  live = new EventSource(url);
  live.addEventListener('line', ({ data }) => {
    let line;
    try {
      line = JSON.parse(data);
    } catch {
      return; // not a line: the verifier would refuse it anyway
    }
    // Appended as the export would hold it: one line of JSON per event,
    // after the events (a trailer speaks for the head it was signed at:
    // once the battle moves on it is dropped, and its checkpoint with it).
    liveMoved = true;
    exportText = `${withoutTrailer(exportText)}\n${data}\n`;
    exportElement.textContent = exportText;
    if (Number.isSafeInteger(line.version) && line.event && !document.getElementById(`v${line.version}`)) {
      const ev = line.event;
      const roll = ev.type === 'DiceRolled'
        ? { nonce: ev.nonce, expression: ev.expression, recorded: { dice: ev.dice, total: ev.total, error: ev.error || null } }
        : null;
      document.getElementById('timeline')?.append(drawEvent(document, line.version, ev, roll, lang));
      updateDisputes(document, line.version, ev);
      document.body.setAttribute('data-head', line.hash);
    }
    check();
  });
  live.addEventListener('closed', () => {
    live.close();
    document.body.setAttribute('data-status', 'closed');
  });
}

const headInput = document.getElementById('posted-head');
if (headInput) {
  if (!headInput.value) headInput.value = new URLSearchParams(location.search).get('head') || '';
  headInput.addEventListener('change', () => check());
}
// Keys (issue 39): d — the next dispute after the event in view (the
// address's #vN), Shift+d — the one before; never while typing in a field.
// (A stand-in document under Node has no events: nothing to wire.)
document.addEventListener?.('keydown', (event) => {
  if (event.key.toLowerCase() !== 'd' || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target && event.target.closest && event.target.closest('input, textarea, select, [contenteditable]')) return;
  const disputes = [...document.querySelectorAll('.event[data-type="DisputeRaised"]')];
  if (disputes.length === 0) return;
  const here = Number((/^#v(\d+)$/.exec(location.hash) ?? [])[1] ?? -1);
  const version = (el) => Number(el.getAttribute('data-version'));
  const target = event.shiftKey
    ? [...disputes].reverse().find((el) => version(el) < here) ?? disputes[disputes.length - 1]
    : disputes.find((el) => version(el) > here) ?? disputes[0];
  event.preventDefault();
  history.replaceState(null, '', `#v${version(target)}`);
  target.setAttribute('tabindex', '-1');
  target.focus();
  target.scrollIntoView({ block: 'start' });
});
wireCopyCheckpoint(document);
prewarm();
check().then(followLive);
