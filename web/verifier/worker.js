// verifyExport off the page's main thread: a module Web Worker (same
// origin, allowed by the pages' CSP `worker-src 'self'`). The page posts
// { id, text, options } and gets { id, type: 'progress', done, total }
// messages, then { id, type: 'report', report } or { id, type: 'error',
// name, message }. The report is structured-cloned: plain data.
import { loadRules } from './audit.js';
import { verifyExport } from './verify.js';

// Every module is loaded once this runs, and the rules engine once
// loadRules settles: then tell the page (verifying makes no request after).
loadRules().then(() => self.postMessage({ type: 'ready' }));

self.addEventListener('message', async ({ data }) => {
  const { id, text, options } = data;
  try {
    const started = performance.now();
    const report = await verifyExport(text, {
      ...options,
      onProgress: (done, total) => self.postMessage({ id, type: 'progress', done, total }),
    });
    // How long the verification itself took, apart from the messages.
    report.timing = { workerMs: performance.now() - started };
    self.postMessage({ id, type: 'report', report });
  } catch (error) {
    self.postMessage({ id, type: 'error', name: error && error.name, message: String(error && error.message ? error.message : error) });
  }
});
