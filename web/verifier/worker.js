// verifyExport off the page's main thread: a module Web Worker (same
// origin, allowed by the pages' CSP `worker-src 'self'`). The page posts
// { id, text, options } — or { id, url, options }: the worker fetches the
// export itself (the battle page, issue 39: the export is not in the page,
// so the worker reads it while the page is still parsing) — and gets
// { id, type: 'progress', done, total } messages, then
// { id, type: 'report', report, text } (text: the export checked, when the
// worker fetched it) or { id, type: 'error', name, message }. The report is
// structured-cloned: plain data.
import { fetchExport } from './fetch-export.js';

// The verifier is imported, not loaded before the first message is read:
// a fetch asked for starts while its modules are still arriving.
const verifier = Promise.all([import('./audit.js'), import('./verify.js')]);

// Every module is loaded once this runs, and the rules engine once
// loadRules settles: then tell the page (verifying makes no request after).
verifier.then(([audit]) => audit.loadRules()).then(() => self.postMessage({ type: 'ready' }));

self.addEventListener('message', async ({ data }) => {
  const { id, url, options } = data;
  try {
    const [[, { verifyExport }], text] = await Promise.all([verifier, url ? fetchExport(url) : data.text]);
    const started = performance.now();
    const report = await verifyExport(text, {
      ...options,
      onProgress: (done, total) => self.postMessage({ id, type: 'progress', done, total }),
    });
    // How long the verification itself took, apart from the messages.
    report.timing = { workerMs: performance.now() - started };
    self.postMessage({ id, type: 'report', report, text: url ? text : undefined });
  } catch (error) {
    self.postMessage({ id, type: 'error', name: error && error.name, message: String(error && error.message ? error.message : error) });
  }
});
