"""The battle page's speed (issue 39: a 2 000-event page verified within 1 s
on the desktop, first paint within 0.3 s), in its structure: the figures
themselves are bench_page.py's (BENCHMARKS.md), not timed assertions here.
What makes them, checked on a demo battle's page (its share link):

  - the page does not carry its export (it was three quarters of a big
    battle's HTML): no line of the export is in the HTML; the head links it
    (`link#export-link`), the link keeps the share key, and what it gives
    is exactly `battlelog export`'s text;
  - the check starts in the head, before the body (issue 39, third step):
    its first script is inline (no request to wait for), admitted by the
    Content-Security-Policy by its SHA-256 and by nothing looser, and names
    the worker it starts (`data-worker`); the head then preloads the
    page's own modules (`<link rel="modulepreload">`: every module script
    of the page), not the worker's (the worker asks for those itself as it
    starts), and has the module that takes the check over, `async`;
  - in Chromium, the export is asked for by the head's script, before the
    page is parsed (its request starts before DOM interactive);
  - the page comes in parts, the first of which ends with the verdict
    banner and holds no event: read off the wire (no compression, so that
    the server's own chunks are seen), the first chunk of the chunked
    answer has `#verdict` and no `.event`;
  - in Chromium, the page still verifies, and `script#battle-export` then
    holds the export it checked.
Expected values come from `battlelog export`, never from the page under test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import urllib.parse
import urllib.request

import browser_tests as bt


def raw_get(url: str) -> tuple[dict[str, str], bytes]:
    """GET `url` over a plain socket: the answer's headers and its body as
    sent (chunked framing kept)."""
    parts = urllib.parse.urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    with socket.create_connection((parts.hostname, parts.port or 80), timeout=30) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers, body


def events_of(text: str) -> list[str]:
    """An export's event lines (each with a version), as they are."""
    return [line for line in text.strip().split("\n") if line.strip() and "version" in json.loads(line)]


def first_chunk(body: bytes) -> bytes | None:
    """The first chunk of a chunked body, or None when it is not one."""
    size, sep, rest = body.partition(b"\r\n")
    try:
        length = int(size.split(b";")[0], 16)
    except ValueError:
        return None
    return rest[:length] if sep else None


def check_page(env: bt.Env, browser, results: bt.Results, battle: str, link: str) -> None:
    name = f"speed: battle page {battle}"
    source = env.work / f"{battle}.jsonl"
    # The event lines: the trailer's checkpoint is of the whole log, which
    # other battles grow between two reads.
    exported = events_of(source.read_text())
    status, page = bt.http_status(link)
    if not results.check(f"{name}: the page opens", status == 200, f"HTTP {status}"):
        return
    head = page.split("</head>")[0]
    records = [line["record"] for line in bt.event_lines(source)]
    embedded = [r for r in records if r[:40] in page]
    results.check(f"{name}: no line of the export is in the page", not embedded, f"{len(embedded)} of {len(records)} records in the HTML")
    found = re.search(r'<link id="export-link"[^>]*href="([^"]+)"', head)
    if results.check(f"{name}: the head links the export (link#export-link)", found is not None, head[-400:]):
        href = found.group(1).replace("&amp;", "&")
        results.check(f"{name}: the export link keeps the share key", f"k={bt.share_key(link)}" in href, href)
        status, linked = bt.http_status(urllib.parse.urljoin(env.web, href))
        results.check(f"{name}: the link gives `battlelog export`'s events, exactly", status == 200 and events_of(linked) == exported, f"HTTP {status}, {len(linked)} bytes vs {len(exported)}")
    check_head_scripts(env, results, name, link, page)

    headers, body = raw_get(link)
    chunked = headers.get("transfer-encoding", "").lower() == "chunked"
    chunk = first_chunk(body) if chunked else None
    results.check(f"{name}: the page is sent in parts (chunked)", chunk is not None, f"headers {headers}")
    if chunk is not None:
        text = chunk.decode("utf-8", "replace")
        results.check(f"{name}: the first part ends with the verdict banner", 'id="verdict"' in text and text.rstrip().endswith("</section>"), text[-300:])
        results.check(f"{name}: the first part holds no event", 'class="event' not in text and "data-version=" not in text, f"{len(text)} bytes")

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page_ = context.new_page()
    page_.goto(link)
    verdict = bt.wait_verdict(page_)
    results.check(f"{name}: verified in Chromium", verdict == "verified", verdict)
    asked = page_.evaluate(
        """() => {
          const nav = performance.getEntriesByType('navigation')[0];
          const ask = performance.getEntriesByType('resource').find((r) => r.name.includes('/export.jsonl'));
          return { asked: ask ? ask.startTime : null, interactive: nav ? nav.domInteractive : null };
        }"""
    )
    results.check(
        f"{name}: the head's script asks for the export before the page is parsed",
        asked["asked"] is not None and asked["interactive"] is not None and asked["asked"] < asked["interactive"],
        str(asked),
    )
    checked = page_.evaluate("document.getElementById('battle-export')?.textContent ?? ''")
    results.check(f"{name}: script#battle-export holds the export it checked", events_of(checked) == exported, f"{len(checked)} bytes vs {len(exported)}")
    context.close()


def check_head_scripts(env: bt.Env, results: bt.Results, name: str, link: str, page: str) -> None:
    """The head's scripts: the inline first step (admitted by its hash), the
    page's modules preloaded, the async module that takes the check over."""
    head = page.split("</head>")[0]
    inline = re.search(r'<script data-worker="([^"]+)">(.*?)</script>', head, re.S)
    # The first that runs (the JSON data elements before it run nothing),
    # and before the preloads, so that nothing queues ahead of it.
    runs = [m.start() for m in re.finditer(r'<script(?![^>]*type="application/json")|<link rel="modulepreload"', head)]
    if results.check(f"{name}: the head's first script is inline and names the worker it starts", inline is not None and runs and runs[0] == inline.start(), head[-400:]):
        worker, text = inline.group(1), inline.group(2)
        results.check(f"{name}: the worker it names is served", bt.http_status(urllib.parse.urljoin(env.web, worker))[0] == 200, worker)
        request = urllib.request.Request(link)
        with urllib.request.urlopen(request, timeout=30) as response:
            policy = response.headers.get("Content-Security-Policy", "")
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        script_src = next((d.strip() for d in policy.split(";") if d.strip().startswith("script-src")), "")
        results.check(f"{name}: the policy admits that script by its hash, and nothing looser", script_src == f"script-src 'self' 'sha256-{digest}'", script_src)
    preloaded = set(re.findall(r'<link rel="modulepreload" href="([^"]+)"', head))
    scripts = re.findall(r'<script type="module"[^>]*src="([^"]+)"', page)
    results.check(f"{name}: the head preloads the page's own modules", bool(preloaded) and all(s in preloaded for s in scripts), f"{len(preloaded)} preloaded; scripts {scripts}")
    workers = [p for p in preloaded if p.endswith(("/worker.js", "/audit.js", "/rules/index.js"))]
    results.check(f"{name}: not the worker's (it asks for them itself)", not workers, str(workers))
    results.check(f"{name}: the module that takes the check over is in the head, async", re.search(r'<script type="module" async src="[^"]+"', head) is not None, head[-300:])


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    if not battles:
        results.check("speed: a demo battle to check", False)
        return
    battle, link = battles[0]
    try:
        check_page(env, browser, results, battle, link)
    except Exception:
        results.crashed(f"speed: battle page {battle}")
