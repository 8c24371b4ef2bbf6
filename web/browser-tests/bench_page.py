#!/usr/bin/env python3
"""The big-battle benchmark of the battle page (issue 21), against a running
`battlelog up`:

    cargo build --release --bins
    BROWSER_TESTS_SCRIPT=bench_page.py web/browser-tests/run-against-up.sh target/release/battlelog

(release binaries: the page is rendered and compressed by the web service,
and an operator runs release).

Builds a closed battle of about 2 000 events (BENCH_ACTS roll actions,
default 999: a roll and an action each, plus open, close and reveal), then
opens its page in headless Chromium and prints, for each profile, the median
of BENCH_RUNS loads (default 3) of:

  - first paint: the paint timing's first-contentful-paint;
  - before the browser runs: the page's answer alone, with gzip and with
    brotli (time to the first and the last byte);
  - the server's share (navigation timing): first and last byte of the
    page, DOM interactive, and the page's size as sent and decoded;
  - verified: when the page's verdict and every mark are in place
    (performance mark `battlelog-marked`, from navigation start);
  - of which verifying: from the start of the verification to the report
    on the page (of which in the worker: verifyExport itself, the rest is
    fetching the export, messages and waiting for the page's main thread),
    and marking: comparing the drawing and marking it. Since issue 39 the
    check starts from the page's head (the worker fetches the export while
    the page arrives), so verifying overlaps the page's parse.

Profiles: desktop (1280×900) and phone (390×844 with a 4× CPU throttle,
Chrome DevTools Protocol `Emulation.setCPUThrottlingRate`).
The aim: verified under 1 s on desktop and under 4 s on the phone profile,
first paint under 300 ms.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright

import browser_tests as bt

PROFILES = [
    ("desktop 1280×900", {"width": 1280, "height": 900}, 1),
    ("phone 390×844, CPU ×4 slower", {"width": 390, "height": 844}, 4),
]

TIMINGS = """() => {
  const at = (name) => performance.getEntriesByName(name)[0]?.startTime ?? null;
  return {
    paint: at('first-contentful-paint'),
    start: at('battlelog-verify-start'),
    report: at('battlelog-report'),
    worker: performance.getEntriesByName('battlelog-report')[0]?.detail?.workerMs ?? null,
    marked: at('battlelog-marked'),
    script: at('battlelog-page-script'),
    received: at('battlelog-report-received'),
    // The worker's steps, from wall-clock times to this page's timeline.
    ...(() => {
      const t = performance.getEntriesByName('battlelog-report')[0]?.detail ?? {};
      const rel = (x) => (typeof x === 'number' ? x - performance.timeOrigin : null);
      // The export in: fetched by the page's head (pages/battle-boot.js), else by the worker.
      return { fetchStart: rel(t.fetchStart), fetched: at('battlelog-export-fetched') ?? rel(t.fetched), workerDone: rel(t.verified) };
    })(),
    // The export's request as the page's head made it (resource timing).
    ...(() => {
      const r = performance.getEntriesByType('resource').find((e) => e.name.includes('/export.jsonl'));
      return r ? { exportAsked: r.startTime, exportSent: r.requestStart, exportFirstByte: r.responseStart, exportLastByte: r.responseEnd } : { exportAsked: null, exportFirstByte: null, exportLastByte: null };
    })(),
    // Navigation timing: the server's answer (first byte, last byte) and the
    // page's parse, to tell the server's share from the browser's.
    ...(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      return nav ? {
        firstByte: nav.responseStart, lastByte: nav.responseEnd, interactive: nav.domInteractive,
        transfer: nav.transferSize, decoded: nav.decodedBodySize,
      } : {};
    })(),
    audit: document.body.dataset.audit,
    events: document.querySelectorAll('.event').length,
    elements: document.getElementsByTagName('*').length,
  };
}"""


def main() -> int:
    env = bt.Env.from_environ()
    acts = int(os.environ.get("BENCH_ACTS", "999"))
    runs = int(os.environ.get("BENCH_RUNS", "3"))
    forum = {"BATTLELOG_TOKEN": bt.token(env, "forum", "dev")}
    started = time.monotonic()
    battle = bt.run([env.node, str(env.tools / "open-and-act.mjs"), env.resolver, "--acts", str(acts), "--close"], forum).strip()
    source = bt.export(env, battle)
    events = len(bt.event_lines(source))
    # Kept for profiling the verifier under Node (target/browser/bench-export.jsonl).
    env.shots.mkdir(parents=True, exist_ok=True)
    (env.shots / "bench-export.jsonl").write_text(source.read_text())
    print(f"bench: battle {battle}: {events} events, {source.stat().st_size} bytes of export, built in {time.monotonic() - started:.1f} s", flush=True)
    reader = bt.token(env, "reader", "dev")
    # The server's answer alone, as a client that takes gzip (or brotli, as
    # Chromium asks for) gets it, no browser: time to the first byte and to
    # the last, median of BENCH_RUNS.
    for encoding in ("gzip", "br"):
        fetches = []
        for _ in range(runs):
            request = urllib.request.Request(f"{env.web}/battles/{battle}", headers={"Authorization": f"Bearer {reader}", "Accept-Encoding": encoding})
            begin = time.perf_counter()
            with urllib.request.urlopen(request, timeout=120) as response:
                first = time.perf_counter()
                body = response.read()
                fetches.append(((first - begin) * 1000, (time.perf_counter() - begin) * 1000, len(body), response.headers.get("Content-Encoding")))
        print(
            f"bench: server alone ({encoding}): first byte {statistics.median(f[0] for f in fetches):.0f} ms, "
            f"last byte {statistics.median(f[1] for f in fetches):.0f} ms, {fetches[0][2]} bytes ({fetches[0][3]}); "
            f"runs {[round(f[1]) for f in fetches]}",
            flush=True,
        )
    ok = True
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=bt.CHROMIUM, headless=True, chromium_sandbox=False, args=bt.CHROMIUM_ARGS)
        print(f"bench: Chromium {browser.version}", flush=True)
        for label, viewport, throttle in PROFILES:
            samples = []
            for _ in range(runs):
                context = browser.new_context(viewport=viewport, extra_http_headers={"Authorization": f"Bearer {reader}"})
                page = context.new_page()
                if throttle > 1:
                    page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": throttle})
                page.goto(f"{env.web}/battles/{battle}")
                page.wait_for_function("() => performance.getEntriesByName('battlelog-marked').length > 0", timeout=120_000)
                samples.append(page.evaluate(TIMINGS))
                context.close()
            def med(key: str) -> float:
                # A step a binary does not mark (an older build): nan.
                values = [s[key] for s in samples if s.get(key) is not None]
                return statistics.median(values) if values else float("nan")

            audits = {s["audit"] for s in samples}
            ok = ok and audits == {"verified"}
            print(
                f"bench: {label}: first paint {med('paint'):.0f} ms, verified {med('marked'):.0f} ms "
                f"(verifying {statistics.median(s['report'] - s['start'] for s in samples):.0f} ms, "
                f"of which in the worker {statistics.median(s['worker'] or 0 for s in samples):.0f} ms, "
                f"marking {statistics.median(s['marked'] - s['report'] for s in samples):.0f} ms); "
                f"server: first byte {med('firstByte'):.0f} ms, last byte {med('lastByte'):.0f} ms, "
                f"DOM interactive {med('interactive'):.0f} ms, page script {med('script'):.0f} ms; "
                f"export: asked {med('exportAsked'):.0f} ms, sent {med('exportSent'):.0f} ms, first byte {med('exportFirstByte'):.0f} ms, last byte {med('exportLastByte'):.0f} ms, in {med('fetched'):.0f} ms; worker: asked {med('fetchStart'):.0f} ms, verified {med('workerDone'):.0f} ms, "
                f"report received {med('received'):.0f} ms; page {samples[0]['transfer']} bytes sent "
                f"({samples[0]['decoded']} decoded); "
                f"{samples[0]['events']} events drawn, {samples[0]['elements']} elements; verdict {sorted(audits)}; "
                f"runs {[round(s['marked']) for s in samples]}",
                flush=True,
            )
        browser.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
