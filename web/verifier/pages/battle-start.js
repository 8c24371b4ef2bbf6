// The battle page's check, started from the page's head (an `async` module
// script, issue 39): the page no longer carries its export, so the worker
// fetches it (link#export-link, the same `export.jsonl` a judge downloads,
// share key included) and verifies it while the browser is still receiving
// and parsing the page. The worker and its first check are the ones
// pages/battle-boot.js started as the head was read, taken over here; where
// it started none, they start here. pages/battle.js, which needs the whole
// page, takes the result from here (`started`) for its first check.
//
// Inputs, all in the page's head: link#export-link (the export's URL),
// #roller-keys (the roller keys the site trusts, JSON) and #log-keys (the
// journal's log key the site publishes, JSON). The head the forum posted is
// the address's ?head= (the body's input#posted-head is pre-filled with the
// same; it is not parsed yet). pages/inputs.js reads them.
import { adoptBoot, verifyUrlOffThread } from '../client.js';
import { headOfInput, keysOfJson, optionsOfPage } from './inputs.js';

/** The keys a JSON script element of the page lists (`{ "keys": [...] }`). */
export function trustedKeys(id) {
  const el = document.getElementById(id);
  return el ? keysOfJson(el.textContent) : [];
}

/**
 * The head the forum posted: the field once the page has it, else ?head=.
 * A malformed one (typed, or ?head=) is an input error named at the field,
 * never a failed battle: it is left out of the check.
 */
export function postedHead() {
  const input = document.getElementById('posted-head');
  return headOfInput(input ? input.value : new URLSearchParams(location.search).get('head'));
}

/** The export's URL, as the server wrote it. */
export const exportUrl = document.getElementById('export-link')?.getAttribute('href') ?? '';

// Progress before the page has a place to show it is kept for that place.
let progressListener = null;
let lastProgress = null;

/** Calls `listener(done, total)` with the progress so far, then with each step. */
export function onProgress(listener) {
  progressListener = listener;
  if (lastProgress) listener(...lastProgress);
}

/** The first check: { report, text } (the export checked), or why not. */
export const started = (() => {
  const progress = (done, total) => {
    lastProgress = [done, total];
    if (progressListener) progressListener(done, total);
  };
  // The same options the head's worker was given, for the page to check
  // the export itself should that worker fail to load.
  const options = optionsOfPage({
    head: new URLSearchParams(location.search).get('head') ?? '',
    rollerKeys: document.getElementById('roller-keys')?.textContent ?? '',
    logKeys: document.getElementById('log-keys')?.textContent ?? '',
  });
  const adopted = adoptBoot(exportUrl, options, progress);
  if (adopted) return adopted;
  // Timings for the benchmark (web/browser-tests/bench_page.py): with no
  // worker from the head, the check starts here.
  performance.mark('battlelog-verify-start');
  return verifyUrlOffThread(exportUrl, options, progress);
})();
// battle.js reports a failure once the page is there; never an unhandled rejection before.
started.then(() => performance.mark('battlelog-report-received'), () => {});
