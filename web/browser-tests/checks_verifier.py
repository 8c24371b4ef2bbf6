"""Browser checks of the verifier's part of issue 21, against the running
`battlelog up` (browser_tests.py runs `run` below):

  - what is drawn is what was verified: a demo battle page served with one
    die's visible face changed in transit, or one summary changed ("crit ×2,
    180 damage"), fails at that version (the log itself is untouched);
  - /verify fails an outcome-forged export (hit → crit, chain and
    signatures intact) at its version, by the rules engine
    (web/verifier/rules/index.js);
  - the roller key is pinned: /verify with ?roller_key=<up's roller key>
    says `pinned` for the demo export and `mismatch` (failed at version 0)
    for the same export re-signed end to end with another key;
  - with Ed25519 taken out of the page's WebCrypto (and no Worker, so the
    page itself verifies), a bad signature still fails and a good one
    verifies, by the vendored JavaScript Ed25519;
  - the offline /verify (web/verifier/pages/offline.html, served by a plain
    static file server) verifies and fails as /verify does;
  - live: an open battle's page appends the events journaled while it is
    open and verifies again (the live endpoint, body[data-live-url]).

Expected values come from the CLI's export and tamper.mjs, never from the
page under test.
"""

from __future__ import annotations

import functools
import html as htmlmod
import http.server
import re
import threading
from pathlib import Path

import browser_tests as bt

REPO = Path(__file__).resolve().parents[2]
VERIFIER = REPO / "web" / "verifier"


def verdict_and_first(page) -> tuple[str, int | None]:
    return bt.wait_verdict(page), bt.first_failure(page)


def roller_key(env: bt.Env) -> str:
    return bt.run([env.battlelog, "roller-key", "--master-key-file", str(Path(env.data_dir) / "roller" / "master.key")]).strip()


# --- what is drawn is what was verified ---


def change_a_face(text: str) -> tuple[str, str, str, str] | None:
    """The page with one die's visible face one higher: (html, nonce, from, to)."""
    for m in re.finditer(r'data-face="(\d+)"', text):
        start = text.rfind("<", 0, m.start())
        end = text.find(">", m.end())
        tag = text[start : end + 1]
        sides = re.search(r'data-sides="(\d+)"', tag)
        value = int(m.group(1))
        if "data-fudge" in tag or not sides or value + 1 > int(sides.group(1)):
            continue
        nonce = re.findall(r'data-nonce="(\d+)"', text[: m.start()])
        if not nonce:
            continue
        stop = min(i for i in (text.find("data-face=", end), text.find('class="total"', end), len(text)) if i >= 0)
        segment = text[end + 1 : stop]
        pip = re.search(r'<(\w+)[^>]*class="[^"]*\bpip\b[^"]*"[^>]*>(?:</\1>)?', segment)
        if pip:
            changed = segment[: pip.end()] + pip.group(0) + segment[pip.end() :]
        else:
            shown = re.search(r'(class="[^"]*\bvalue\b[^"]*"[^>]*>)\s*' + str(value) + r"\s*<", segment)
            if not shown:
                continue
            changed = segment[: shown.start()] + shown.group(1) + str(value + 1) + "<" + segment[shown.end() :]
        return text[: end + 1] + changed + text[stop:], nonce[-1], str(value), str(value + 1)
    return None


def change_a_summary(text: str) -> tuple[str, str] | None:
    """The page with the first English action summary replaced: (html, the original text)."""
    m = re.search(r'(<[^>]*data-summary="summary_en"[^>]*>)([^<]*)<', text)
    if not m:
        return None
    forged = "pikachu → meowth, Thunderbolt: crit ×2, 180 damage"
    return text[: m.start(2)] + forged + text[m.end(2) :], htmlmod.unescape(m.group(2))


def check_drawn_in_transit(env: bt.Env, browser, results: bt.Results, battle: str, link: str) -> None:
    source = env.work / f"{battle}.jsonl"
    lines = bt.event_lines(source)
    version_of_nonce = {str(l["event"]["nonce"]): l["version"] for l in lines if l["event_type"] == "DiceRolled"}
    for what in ("face", "summary"):
        name = f"battle page {battle}, one {'die’s visible face' if what == 'face' else 'summary'} changed in transit"
        try:
            found: dict[str, object] = {}

            def forge(route) -> None:
                reply = route.fetch()
                text = reply.text()
                if "battle-export" in text and not found:
                    if what == "face":
                        changed = change_a_face(text)
                        if changed:
                            text, found["nonce"], found["from"], found["to"] = changed
                    else:
                        changed = change_a_summary(text)
                        if changed:
                            text, found["original"] = changed
                route.fulfill(response=reply, body=text)

            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route(f"{env.web}/battles/**", forge)
            page.goto(link)
            verdict, first = verdict_and_first(page)
            if not results.check(f"{name}: the page had one to change", bool(found), "no data-face / data-summary drawn (DOM contract v2)"):
                page.close()
                continue
            if what == "face":
                want = version_of_nonce[str(found["nonce"])]
                label = f"{name} ({found['from']} → {found['to']}, nonce {found['nonce']})"
            else:
                matches = [l["version"] for l in lines if bt.normalized(l["event"].get("summary_en", "")) == bt.normalized(str(found["original"]))]
                want = matches[0] if matches else None
                label = name
            results.check(f"{label}: data-audit failed", verdict == "failed", f"got {verdict!r}")
            results.check(f"{label}: #first-failure shows {want}", want is not None and first == want, f"got {first}")
            marked = page.evaluate("v => document.getElementById('v' + v)?.getAttribute('data-check')", want)
            results.check(f"{label}: event v{want} marked bad", marked == "bad", f"got {marked!r}")
            drawing = page.evaluate("document.querySelector('#checks [data-check-name=\"drawing\"]')?.getAttribute('data-check')")
            results.check(f"{label}: the checks list says the drawing is bad", drawing == "bad", f"got {drawing!r}")
            page.close()
        except Exception:
            results.crashed(name)


# --- /verify: outcomes, the roller key, no Ed25519 ---


def choose(browser, url: str, path: Path, init_script: str | None = None):
    context = browser.new_context()
    if init_script:
        context.add_init_script(init_script)
    page = context.new_page()
    page.goto(url)
    verdict, first, _ = bt.choose_export(page, path)
    return context, page, verdict, first


def check_outcome_forged(env: bt.Env, browser, results: bt.Results, source: Path) -> None:
    name = "/verify: an outcome forged (hit → crit, chain and signatures recomputed)"
    try:
        forged, version = bt.tamper(env, "crit", source, "first-damage")
        if not results.check(f"{name}: the rules engine is in this tree", (VERIFIER / "rules" / "index.js").is_file()):
            return
        context, page, verdict, first = choose(browser, f"{env.web}/verify", forged)
        results.check(f"{name}: data-audit failed", verdict == "failed", f"got {verdict!r}")
        results.check(f"{name}: #first-failure shows {version}", first == version, f"got {first}")
        outcomes = page.evaluate("document.querySelector('#checks [data-check-name=\"outcomes\"]')?.getAttribute('data-check')")
        results.check(f"{name}: the outcomes check is bad", outcomes == "bad", f"got {outcomes!r}")
        context.close()
    except Exception:
        results.crashed(name)


def check_roller_key(env: bt.Env, browser, results: bt.Results, source: Path, base: str, where: str) -> None:
    key = roller_key(env)
    resigned, _ = bt.tamper(env, "resign", source, "0")
    url = bt.with_query(base, roller_key=key)
    for label, path, want, want_first, want_key in [
        ("the demo export, ?roller_key= the site's", source, "verified", None, "pinned"),
        ("the demo export re-signed with another key, ?roller_key= the site's", resigned, "failed", 0, "mismatch"),
    ]:
        name = f"{where}: {label}"
        try:
            context, page, verdict, first = choose(browser, url, path)
            results.check(f"{name}: data-audit {want}", verdict == want, f"got {verdict!r}")
            if want_first is not None:
                results.check(f"{name}: #first-failure shows {want_first}", first == want_first, f"got {first}")
            got_key = page.evaluate("document.body.dataset.rollerKey")
            results.check(f"{name}: data-roller-key {want_key}", got_key == want_key, f"got {got_key!r}")
            shown = page.evaluate("document.getElementById('roller-key')?.textContent ?? null")
            signer = bt.event_lines(path)[0]["event"]["roller_key"]
            results.check(f"{name}: #roller-key shows the key that signed", shown == signer, f"got {shown!r}, signed by {signer}")
            context.close()
        except Exception:
            results.crashed(name)
    # No key typed: the site's own keys (#roller-keys) when it publishes them.
    name = f"{where}: the re-signed export, no key typed"
    try:
        context, page, verdict, first = choose(browser, base, resigned)
        published = page.evaluate("(() => { try { return JSON.parse(document.getElementById('roller-keys').textContent).keys } catch { return null } })()")
        got_key = page.evaluate("document.body.dataset.rollerKey")
        if published:
            results.check(f"{name}: the site's keys are pinned: mismatch, failed", (got_key, verdict) == ("mismatch", "failed"), f"got {got_key!r}, {verdict!r}")
        else:
            results.check(f"{name}, the site publishes none: unpinned, said so", got_key == "unpinned", f"got {got_key!r}")
        context.close()
    except Exception:
        results.crashed(name)


# Ed25519 taken out of WebCrypto, and no Worker (so the page verifies in its
# own thread, under this script): every call for Ed25519 is refused as a
# browser without it refuses it, and counted.
NO_ED25519 = """
(() => {
  window.__ed25519Refused = 0;
  const subtle = crypto.subtle;
  const isEd = (a) => (typeof a === 'string' ? a : a && a.name) === 'Ed25519';
  for (const name of ['importKey', 'verify', 'sign', 'generateKey', 'exportKey']) {
    const original = subtle[name].bind(subtle);
    subtle[name] = (...args) => {
      if (args.some(isEd)) {
        window.__ed25519Refused += 1;
        return Promise.reject(new DOMException('Unrecognized algorithm name', 'NotSupportedError'));
      }
      return original(...args);
    };
  }
  window.Worker = undefined;
})();
"""


def check_without_ed25519(env: bt.Env, browser, results: bt.Results, source: Path, base: str, where: str) -> None:
    bad_sig, _ = bt.tamper(env, "sig", source, "0")
    for label, path, want, want_first in [
        ("a good signature", source, "verified", None),
        ("a bad signature (one bit of epoch 0's)", bad_sig, "failed", 0),
    ]:
        name = f"{where} without Ed25519 in WebCrypto: {label}"
        try:
            context, page, verdict, first = choose(browser, base, path, NO_ED25519)
            refused = page.evaluate("window.__ed25519Refused")
            results.check(f"{name}: WebCrypto's Ed25519 was asked and refused", refused > 0, f"refused {refused} times")
            results.check(f"{name}: data-audit {want}", verdict == want, f"got {verdict!r}")
            if want_first is not None:
                results.check(f"{name}: #first-failure shows {want_first}", first == want_first, f"got {first}")
            signatures = page.evaluate("document.querySelector('#checks [data-check-name=\"signatures\"]')?.getAttribute('data-check')")
            results.check(f"{name}: the signatures check is {'ok' if want == 'verified' else 'bad'}", signatures == ("ok" if want == "verified" else "bad"), f"got {signatures!r}")
            context.close()
        except Exception:
            results.crashed(name)


# --- the offline /verify ---


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def check_offline(env: bt.Env, browser, results: bt.Results, source: Path) -> None:
    name = "offline /verify (pages/offline.html on a static server)"
    server = None
    try:
        handler = functools.partial(Quiet, directory=str(VERIFIER))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/pages/offline.html"
        bt.check_verify(env, browser, results, source, url, name, shoot=False)
        # The offline page has every element of the verdict: the same checks as /verify's.
        check_roller_key(env, browser, results, source, url, "offline /verify")
        check_without_ed25519(env, browser, results, source, url, "offline /verify")
    except Exception:
        results.crashed(name)
    finally:
        if server:
            server.shutdown()
            server.server_close()


# --- live ---


def check_live(env: bt.Env, browser, results: bt.Results) -> None:
    name = "open battle page, live"
    try:
        forum = {"BATTLELOG_TOKEN": bt.token(env, "forum", "dev")}
        battle = bt.run([env.node, str(env.tools / "open-and-act.mjs"), env.resolver], forum).strip()
        name = f"open battle page {battle}, live"
        context = browser.new_context(extra_http_headers={"Authorization": f"Bearer {bt.token(env, 'reader', 'dev')}"})
        page = context.new_page()
        page.goto(f"{env.web}/battles/{battle}")
        verdict = bt.wait_verdict(page)
        if not results.check(f"{name}: the open battle's page names its live URL", bool(page.evaluate("document.body.dataset.liveUrl ?? null"))):
            context.close()
            return
        results.check(f"{name}: unrevealed at first", verdict == "unrevealed", f"got {verdict!r}")
        bt.run([env.node, str(env.tools / "open-and-act.mjs"), env.resolver, "--battle", battle, "--acts", "1"], forum)
        page.wait_for_selector("#v4[data-check]", timeout=bt.VERDICT_TIMEOUT_MS)
        page.wait_for_function("() => document.body.dataset.audit === 'unrevealed'", timeout=bt.VERDICT_TIMEOUT_MS)
        nonces = [n for n, _ in bt.roll_checks(page)]
        results.check(f"{name}: the new roll (nonce 1) appeared", "1" in nonces, f"rolls on the page {nonces}")
        bt.run([env.node, str(env.tools / "open-and-act.mjs"), env.resolver, "--battle", battle, "--acts", "0", "--close"], forum)
        page.wait_for_function("() => document.body.dataset.audit === 'verified'", timeout=bt.VERDICT_TIMEOUT_MS)
        checks = bt.roll_checks(page)
        results.check(f"{name}: closed live, every roll re-derived ok", all(c == "ok" for _, c in checks) and len(checks) >= 2, f"got {checks}")
        context.close()
    except Exception:
        results.crashed(name)


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    if battles:
        battle, link = battles[0]
        check_drawn_in_transit(env, browser, results, battle, link)
        source = env.work / f"{battle}.jsonl"
        check_outcome_forged(env, browser, results, source)
        check_roller_key(env, browser, results, source, f"{env.web}/verify", "/verify")
        check_without_ed25519(env, browser, results, source, f"{env.web}/verify", "/verify")
        check_offline(env, browser, results, source)
    check_live(env, browser, results)
