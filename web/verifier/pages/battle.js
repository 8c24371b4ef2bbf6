// The battle page's own check (battlelog-web's /battles/{id}): verifies the
// battle's export with the independent verifier, in a Web Worker, then
// compares what the page draws with what was verified and marks it by DOM
// contract v2 (dom.js). The server's word is not trusted: the export is the
// very `export.jsonl` a judge downloads (fetched by the worker, started
// from the page's head by battle-start.js while the page arrives), and
// every die of every roll, every roll's total and every event's summary on
// the page must be backed by it (the server's explanations are not compared).
//
// Inputs on the page: link#export-link, #roller-keys and #log-keys (in the
// head, battle-start.js), input#posted-head (the head the forum posted;
// ?head= pre-fills it), body[data-head] (the head the server says the
// battle is at: the export must end there). The export checked is kept in
// script#battle-export. An open battle (body[data-status="open"]) follows
// body[data-live-url] with an EventSource: each new line is appended to the
// export, drawn, and the whole export verified again.
import { applyError, applyReport } from '../dom.js';
import { pageLanguage } from '../checks.js';
import { prewarm, verifyOffThread, verifyUrlOffThread } from '../client.js';
import { hexFieldProblem } from '../verdict.js';
import { checkHexField, drawEvent, showProgress, updateDisputes, wireCopyCheckpoint } from './draw.js';
import { exportUrl, onProgress, postedHead, started, trustedKeys } from './battle-start.js';

// Timings for the benchmark: when the page's own script runs (after the parse).
performance.mark('battlelog-page-script');
const lang = pageLanguage(document.documentElement.getAttribute('lang'));
const exportElement = document.getElementById('battle-export');
// The export as last checked (null until the first check has it).
let exportText = null;
// The check battle-start.js began, for the first run.
let first = started;

let running = null; // the verification under way
let again = false; // something changed while it ran: run once more after

// Set once a live event is appended: the export then goes past the head its
// trailer was signed at, so it has none, and that is no finding.
let liveMoved = false;

/** The export verified: the first check's, else again (the head typed, a live line) with the text in hand. */
async function verified(progress) {
  let result;
  if (first) {
    const begun = first;
    first = null;
    onProgress(progress);
    result = await begun;
  } else {
    // Timings for the benchmark (web/browser-tests/bench_page.py).
    performance.mark('battlelog-verify-start');
    const options = { head: postedHead(), rollerKeys: trustedKeys('roller-keys'), logKeys: trustedKeys('log-keys'), requireTrailer: liveMoved ? false : undefined };
    // The first fetch failed: the export is asked for again.
    result = exportText === null
      ? await verifyUrlOffThread(exportUrl, options, progress)
      : { report: await verifyOffThread(exportText, options, progress), text: exportText };
  }
  exportText ??= result.text;
  return result.report;
}

async function check() {
  if (running) {
    again = true;
    return running;
  }
  running = (async () => {
    const section = document.getElementById('verification');
    const progress = (done, total) => showProgress(document, section, lang, done, total);
    try {
      const report = await verified(progress);
      // The head the server says the battle is at must be the export's end:
      // an export cut short fails there. One that goes on past it is the
      // battle having moved on between the page and the export (it is
      // fetched apart): the events after it are drawn as live ones are.
      const serverHead = document.body.getAttribute('data-head');
      if (serverHead && report.headHash && serverHead.toLowerCase() !== report.headHash.toLowerCase() && !movedOn(report, serverHead)) {
        const last = report.events.length > 0 ? report.events[report.events.length - 1].version : -1;
        report.problems.push({ version: last + 1, check: 'head', cutShort: true, message: `the page says the battle is at head ${serverHead}, its export ends at ${report.headHash}` });
        report.status = 'failed';
      }
      // The checkpoint to keep is the one verified: the export is read after
      // the page, and the log may have been signed at a later size between.
      const note = document.getElementById('checkpoint-note');
      const verifiedNote = report.trailer && report.trailer.check === 'ok' ? report.trailer.checkpoint?.note : null;
      if (note && verifiedNote && note.textContent !== verifiedNote) note.textContent = verifiedNote;
      performance.mark('battlelog-report', { detail: report.timing ?? null });
      const inputError = checkHexField(document, document.getElementById('posted-head'), 'head', lang, hexFieldProblem);
      applyReport(document, report, { inputError });
      performance.mark('battlelog-marked');
      // What was checked, on the page for anyone to read (after the marks:
      // a judge waits for the verdict, not for this copy).
      if (exportElement && exportElement.textContent !== exportText) exportElement.textContent = exportText;
      if (report.events.length > 0) lastVersion = Math.max(lastVersion, report.events[report.events.length - 1].version);
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

/** One export line (parsed) drawn at the end of the timeline, unless the page has it; the page's head moves to it. */
function drawLine(line) {
  if (!Number.isSafeInteger(line.version) || !line.event || document.getElementById(`v${line.version}`)) return;
  const ev = line.event;
  const roll = ev.type === 'DiceRolled'
    ? { nonce: ev.nonce, expression: ev.expression, recorded: { dice: ev.dice, total: ev.total, error: ev.error || null } }
    : null;
  document.getElementById('timeline')?.append(drawEvent(document, line.version, ev, roll, lang));
  // The disputes panel follows: a new dispute, a ruling that answers one.
  updateDisputes(document, line.version, ev);
  document.body.setAttribute('data-head', line.hash);
}

/**
 * Whether the export holds the page's head `head` before its end (the
 * battle moved on after the page was made): if so the later events are
 * drawn and the page's head is the export's.
 */
function movedOn(report, head) {
  const parsed = [];
  for (const text of exportText.split('\n')) {
    try {
      const line = JSON.parse(text);
      if (line && Number.isSafeInteger(line.version)) parsed.push(line);
    } catch {
      // not a line: the verifier has said so
    }
  }
  const at = parsed.findIndex((line) => typeof line.hash === 'string' && line.hash.toLowerCase() === head.toLowerCase());
  if (at < 0) return false;
  for (const line of parsed.slice(at + 1)) drawLine(line);
  document.body.setAttribute('data-head', report.headHash);
  return true;
}

// --- Live: an open battle follows its new events ------------------------
let live = null;
// The last version the export checked holds: a live line up to it (the
// export was read after the page, the stream starts at the page) is had.
let lastVersion = -1;

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
    if (Number.isSafeInteger(line.version) && line.version <= lastVersion) return;
    // Appended as the export would hold it: one line of JSON per event,
    // after the events (a trailer speaks for the head it was signed at:
    // once the battle moves on it is dropped, and its checkpoint with it).
    liveMoved = true;
    exportText = `${withoutTrailer(exportText)}\n${data}\n`;
    exportElement.textContent = exportText;
    if (Number.isSafeInteger(line.version)) lastVersion = line.version;
    drawLine(line);
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
