// verifyExport off the page's main thread: a module Web Worker (same
// origin, allowed by the pages' CSP `worker-src 'self'`). The page posts
// { id, text, options } — or { id, url, options }: the worker fetches the
// export itself (the battle page, issue 39: the export is not in the page,
// so the worker reads it while the page is still parsing), or
// { id, url, page } with the page's inputs as written (pages/inputs.js),
// or { id, bytes, page } with the export's bytes the page fetched itself
// (pages/battle-boot.js) — and gets
// { id, type: 'progress', done, total } messages, then
// { id, type: 'report', report, text } (text: the export checked, when the
// worker fetched it; `bytes` instead, given back, when the page sent them) or { id, type: 'error', name, message }. The report is
// structured-cloned: plain data.
import { fetchExport } from './fetch-export.js';

// The export's bytes as text, as fetch's text() reads them.
const exportDecoder = new TextDecoder();

// The verifier is imported, not loaded before the first message is read:
// a fetch asked for starts while its modules are still arriving. audit.js,
// not verify.js: the public entry also loads protocol v2's beacon (BLS12-381),
// which checking an export does not need.
const verifier = import('./audit.js');

// Every module is loaded once this runs, and the rules engine once
// loadRules settles: then tell the page (verifying makes no request after).
verifier.then((audit) => audit.loadRules()).then(() => self.postMessage({ type: 'ready' }));

self.addEventListener('message', async ({ data }) => {
  const { id, url } = data;
  try {
    // Wall-clock times (ms since the epoch), for the page's benchmark to
    // place the worker's steps on its own timeline.
    const fetchStart = performance.timeOrigin + performance.now();
    let fetched = null;
    const text = url ? fetchExport(url).then((t) => ((fetched = performance.timeOrigin + performance.now()), t)) : data.bytes ? exportDecoder.decode(data.bytes) : data.text;
    // The battle page's head (pages/battle-boot.js) sends the page's inputs
    // as written, read here as the page itself reads them.
    const options = data.page ? import('./pages/inputs.js').then((inputs) => inputs.optionsOfPage(data.page)) : data.options;
    const [{ verifyExport }, exportText, checkOptions] = await Promise.all([verifier, text, options]);
    const started = performance.now();
    const report = await verifyExport(exportText, {
      ...checkOptions,
      onProgress: (done, total) => self.postMessage({ id, type: 'progress', done, total }),
    });
    // How long the verification itself took, apart from the messages.
    report.timing = { workerMs: performance.now() - started, fetchStart, fetched, verified: performance.timeOrigin + performance.now() };
    // The bytes the page sent go back as they came (transferred, not
    // copied: a big export's text costs a copy each way otherwise).
    if (data.bytes) self.postMessage({ id, type: 'report', report, bytes: data.bytes }, [data.bytes]);
    else self.postMessage({ id, type: 'report', report, text: url ? exportText : undefined });
  } catch (error) {
    self.postMessage({ id, type: 'error', name: error && error.name, message: String(error && error.message ? error.message : error) });
  }
});
