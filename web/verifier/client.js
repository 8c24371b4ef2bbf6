// How a page runs the verifier: in a Web Worker (worker.js) so that a big
// battle does not freeze the page, with progress; in the page itself when
// no worker can start (an old browser, a policy that forbids it). The
// worker runs the very modules the page would. The verifier itself is
// imported only when the page has to verify in its own thread: a page whose
// worker starts does not load it twice (the battle page's main thread has
// its own HTML to parse meanwhile).
import { fetchExport } from './fetch-export.js';

/** The verifier (audit.js: verifyExport without the public entry's beacon), loaded on first use in this thread. */
const verifier = () => import('./audit.js');
/** audit.js's loadRules, loaded on first use in this thread. */
const loadRules = () => import('./audit.js').then((audit) => audit.loadRules());

/** verifyExport in this thread. */
async function verifyHere(text, options) {
  const { verifyExport } = await verifier();
  return verifyExport(text, options);
}

/** An error the worker reported, with its name kept (the verdict reads it). */
function namedError(name, message) {
  const error = new Error(message);
  if (name) error.name = name;
  return error;
}

let worker = null;
let nextId = 0;
let readyResolve;
/** Settles once the worker has loaded its modules (or could not start). */
export const ready = new Promise((resolve) => {
  readyResolve = resolve;
});

async function markReady() {
  // The page verifies itself: it loads the rules engine itself.
  if (!worker) await loadRules();
  // For tests and tools: from here on, verifying makes no request.
  if (globalThis.document) document.documentElement.setAttribute('data-verifier-ready', worker ? 'worker' : 'page');
  readyResolve();
}

function startWorker() {
  if (worker === null) {
    try {
      worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
      const onFirst = ({ data }) => {
        if (data && data.type !== 'ready') return;
        worker.removeEventListener('message', onFirst);
        markReady();
      };
      worker.addEventListener('message', onFirst);
      worker.addEventListener('error', () => {
        // It could not load (blocked, not found): the page verifies itself.
        worker = false;
        markReady();
      }, { once: true });
    } catch {
      worker = false;
      markReady();
    }
  }
  return worker || null;
}

/** Starts the worker now, so that its modules are loaded before a file is chosen. */
export function prewarm() {
  startWorker();
  return ready;
}

/**
 * verifyExport(text, options) off the main thread; onProgress(done, total)
 * as it goes. Resolves to the report, rejects as verifyExport would (an
 * ExportFormatError for text that is no export).
 */
export function verifyOffThread(text, options = {}, onProgress = () => {}) {
  return run({ text }, options, onProgress).then(({ report }) => report);
}

/**
 * The same for the export at `url`, which the worker fetches itself (so
 * that it arrives and is checked while the page is busy): resolves to
 * { report, text }, the export checked with it; rejects with an
 * ExportFetchError when the server does not give it.
 */
export function verifyUrlOffThread(url, options = {}, onProgress = () => {}) {
  return run({ url }, options, onProgress);
}

/**
 * The worker the battle page's head started (pages/battle-boot.js) taken
 * over as this page's worker, with the check of the export at `url` it
 * began (message id 0): a promise like verifyUrlOffThread's, or null when
 * the head started none (or this page has its worker already). Should the
 * worker fail to load, the export is checked here with `options`.
 */
export function adoptBoot(url, options, onProgress = () => {}) {
  const boot = globalThis.battlelogBoot;
  if (!boot || worker !== null) return null;
  delete globalThis.battlelogBoot;
  worker = boot.worker;
  return new Promise((resolve, reject) => {
    let settled = false;
    boot.take((event) => {
      if (event.type === 'error') {
        // It could not load (blocked, not found): the page verifies itself.
        worker = false;
        markReady();
        if (!settled) runHere({ url }, options, onProgress).then(resolve, reject);
        settled = true;
        return;
      }
      const { data } = event;
      if (data && data.type === 'ready') return markReady();
      if (!data || data.id !== 0 || settled) return;
      if (data.type === 'progress') return onProgress(data.done, data.total);
      settled = true;
      if (data.type === 'report') resolve({ report: data.report, text: data.bytes ? new TextDecoder().decode(data.bytes) : data.text });
      else reject(namedError(data.name, data.message));
    });
  });
}

/** Verifies `source` ({ text } or { url }) in this thread. */
async function runHere(source, options, onProgress) {
  const text = source.url ? await fetchExport(source.url) : source.text;
  return { report: await verifyHere(text, { ...options, onProgress }), text };
}

function run(source, options, onProgress) {
  const w = startWorker();
  if (!w) return runHere(source, options, onProgress);
  const id = ++nextId;
  return new Promise((resolve, reject) => {
    const onMessage = ({ data }) => {
      if (data.id !== id) return;
      if (data.type === 'progress') return onProgress(data.done, data.total);
      cleanup();
      if (data.type === 'report') resolve({ report: data.report, text: source.url ? data.text : source.text });
      else reject(namedError(data.name, data.message));
    };
    // The worker could not load (blocked, a network error): verify here.
    const onError = (event) => {
      if (event && event.preventDefault) event.preventDefault();
      cleanup();
      worker = false;
      runHere(source, options, onProgress).then(resolve, reject);
    };
    const cleanup = () => {
      w.removeEventListener('message', onMessage);
      w.removeEventListener('error', onError);
    };
    w.addEventListener('message', onMessage);
    w.addEventListener('error', onError);
    w.postMessage({ id, ...source, options });
  });
}
