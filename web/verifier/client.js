// How a page runs the verifier: in a Web Worker (worker.js) so that a big
// battle does not freeze the page, with progress; in the page itself when
// no worker can start (an old browser, a policy that forbids it). The
// worker runs the very modules the page would.
import { loadRules } from './audit.js';
import { ExportFormatError, verifyExport } from './verify.js';

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
  const w = startWorker();
  if (!w) return verifyExport(text, { ...options, onProgress });
  const id = ++nextId;
  return new Promise((resolve, reject) => {
    const onMessage = ({ data }) => {
      if (data.id !== id) return;
      if (data.type === 'progress') return onProgress(data.done, data.total);
      cleanup();
      if (data.type === 'report') resolve(data.report);
      else reject(data.name === 'ExportFormatError' ? new ExportFormatError(0, data.message) : new Error(data.message));
    };
    // The worker could not load (blocked, a network error): verify here.
    const onError = (event) => {
      if (event && event.preventDefault) event.preventDefault();
      cleanup();
      worker = false;
      verifyExport(text, { ...options, onProgress }).then(resolve, reject);
    };
    const cleanup = () => {
      w.removeEventListener('message', onMessage);
      w.removeEventListener('error', onError);
    };
    w.addEventListener('message', onMessage);
    w.addEventListener('error', onError);
    w.postMessage({ id, text, options });
  });
}
