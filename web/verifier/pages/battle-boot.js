// The battle page's first step (issue 39), a classic script inline in the
// page's head (the policy admits it by its hash), after link#export-link,
// #roller-keys and #log-keys, told the worker's URL in `data-worker`. A module script,
// even an `async` one, runs only once the browser's main thread is done with
// most of the page's parse, and a worker it starts waits on that thread
// too; a classic script runs as soon as the head is read. So this one only
// starts the verifier's worker and asks it to fetch and check the export
// (the page's inputs as written; the worker reads them as
// pages/inputs.js says), while the rest of the page is still arriving.
// pages/battle-start.js takes the worker and its answers over
// (`globalThis.battlelogBoot`, client.js's adoptBoot); until then they wait
// here. Where no worker can start, nothing happens here and the page
// checks the export as it did before.
'use strict';
(() => {
  const script = document.currentScript;
  const link = document.getElementById('export-link');
  if (!script || !script.dataset.worker || !link || typeof Worker !== 'function') return;
  let worker;
  try {
    worker = new Worker(script.dataset.worker, { type: 'module' });
  } catch {
    return;
  }
  const text = (id) => document.getElementById(id)?.textContent ?? '';
  const waiting = [];
  const boot = {
    worker,
    // Each message and error so far, then each as it comes, to `handler`.
    take(handler) {
      for (const event of waiting.splice(0)) handler(event);
      boot.handler = handler;
    },
    handler: null,
  };
  const pass = (event) => (boot.handler ? boot.handler(event) : waiting.push(event));
  worker.addEventListener('message', pass);
  worker.addEventListener('error', (event) => {
    // Kept for battle-start.js, which then checks the export itself.
    event.preventDefault();
    pass(event);
  });
  // Timings for the benchmark (web/browser-tests/bench_page.py): the check starts here.
  performance.mark('battlelog-verify-start');
  const url = link.getAttribute('href');
  const page = { head: new URLSearchParams(location.search).get('head') ?? '', rollerKeys: text('roller-keys'), logKeys: text('log-keys') };
  // The export is asked for here, not by the worker: a worker's first
  // request waits for the worker to start, and that waits on this busy
  // thread. Its bytes go to the worker as they are (transferred, not
  // copied); should this fetch fail, the worker asks again and says why.
  fetch(url, { credentials: 'same-origin', headers: { Accept: 'application/x-ndjson' } })
    .then((response) => (response.ok ? response.arrayBuffer() : Promise.reject(new Error(String(response.status)))))
    .then(
      (bytes) => {
        performance.mark('battlelog-export-fetched');
        worker.postMessage({ id: 0, bytes, page }, [bytes]);
      },
      () => worker.postMessage({ id: 0, url, page }),
    );
  globalThis.battlelogBoot = boot;
})();
