#!/usr/bin/env python3
"""Browser tests of the web service (issue 12) against a running `battlelog up`.

Run by run-against-up.sh, which starts the stack and passes where it is in
the environment (see `Env`). Headless Chromium is Debian's build, driven by
Playwright for Python (both installed by scripts/install-tools); Playwright's
own browser download is never used.

What is checked, each as one or more `ok`/`FAIL` lines:
  a. every battle `battlelog demo` plays: its page (the link the demo prints)
     ends `verified` with every roll `ok`, and every roll and event of its
     export is on the page; and the same page served with a forged export
     ends `failed` at the forged version, so the verdict is no formality;
  b. a battle left open after one roll ends `unrevealed`, its rolls
     `unrevealed`, none `bad`;
  c. /verify: the untampered export chosen in the file input ends
     `verified`; a copy with one die changed (chain recomputed) and one with
     an event removed end `failed` at the version tamper.mjs touched, with no
     request to the server once the file is chosen;
  d. (the offline /verify — web/verifier/pages/offline.html served by any
     static server — is checked in checks_verifier.py: ES modules and a Web
     Worker cannot load from file://);
  e. who may read a battle page and its export (401/403/404/200), and that
     /verify needs no credential;
  f. the language switch: ?lang=ru shows the export's Russian summaries and
     not the English ones, ?lang=en the other way round.
Expected values come from the CLI's export and tamper.mjs, never from the
page under test. Screenshots: target/browser/battle.png (a demo battle page)
and target/browser/verify-failed.png (a failed verification on /verify).

Ends with `browser-tests: N passed, M failed`; exits 1 on any failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import traceback
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = os.environ.get("BROWSER_TESTS_CHROMIUM", "/usr/bin/chromium")
# What is known to be needed for Debian's Chromium on a headless CI machine
# running as root: no sandbox (root), no GPU, and nothing that reaches out
# to the network on its own (the machine has none). Playwright adds
# --headless and a fresh --user-data-dir itself.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The in-page verifier re-derives every die with WebCrypto and its own
# ChaCha20; on a busy 2-core CI machine that takes well under this.
VERDICT_TIMEOUT_MS = 60_000
FINAL = ("verified", "failed", "unrevealed")


@dataclass
class Env:
    battlelog: str
    node: str
    web: str  # http://127.0.0.1:PORT
    resolver: str
    data_dir: str
    work: Path
    tools: Path  # web/verifier/tools
    shots: Path  # target/browser

    @staticmethod
    def from_environ() -> "Env":
        e = os.environ
        return Env(
            battlelog=e["BATTLELOG"],
            node=e.get("NODE", "node"),
            web=e["WEB_URL"].rstrip("/"),
            resolver=e["RESOLVER_URL"],
            data_dir=e["DATA_DIR"],
            work=Path(e["WORK"]),
            tools=Path(e["VERIFIER_TOOLS"]),
            shots=Path(e["SCREENSHOT_DIR"]),
        )


class Results:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"browser-tests: ok   {name}", file=sys.stderr)
        else:
            self.failed += 1
            print(f"browser-tests: FAIL {name}{': ' + detail if detail else ''}", file=sys.stderr)
        return ok

    def crashed(self, name: str) -> None:
        self.failed += 1
        print(f"browser-tests: FAIL {name}: {traceback.format_exc()}", file=sys.stderr)


# --- the CLI and the verifier's tools: where the expected values come from ---


def run(args: list[str], env_extra: dict[str, str] | None = None) -> str:
    env = dict(os.environ, **(env_extra or {}))
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def token(env: Env, role: str, tenant: str) -> str:
    return run(
        [env.battlelog, "token", "issue", "--role", role, "--tenant", tenant,
         "--subject", "browser-tests", "--ttl", "30m", "--data-dir", env.data_dir]
    ).strip()


def export(env: Env, battle: str) -> Path:
    path = env.work / f"{battle}.jsonl"
    path.write_text(run([env.battlelog, "export", battle, "--resolver", env.resolver, "--data-dir", env.data_dir]))
    return path


def tamper(env: Env, how: str, src: Path, where: str) -> tuple[Path, int]:
    out = src.with_suffix(f".{how}.jsonl")
    version = run([env.node, str(env.tools / "tamper.mjs"), how, str(src), str(out), where]).strip()
    return out, int(version)


def event_lines(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line for line in lines if "version" in line]


def roll_nonces(path: Path) -> list[str]:
    return [str(line["event"]["nonce"]) for line in event_lines(path) if line["event_type"] == "DiceRolled"]


def summaries(path: Path) -> list[tuple[str, str]]:
    """(summary_ru, summary_en) of every event of the export that has them."""
    return [
        (line["event"]["summary_ru"], line["event"]["summary_en"])
        for line in event_lines(path)
        if "summary_ru" in line["event"] and "summary_en" in line["event"]
    ]


# --- HTTP without a browser (access rules) ---


def http_status(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


def with_query(url: str, **params: str) -> str:
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query))
    query.update(params)
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def share_key(link: str) -> str:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))["k"]


def another_key(key: str) -> str:
    """The same key with its last character changed: well-formed, but wrong."""
    last = key[-1]
    swap = "A" if last != "A" else "B"
    return key[:-1] + swap


# --- the page's DOM contract ---


def wait_verdict(page: Page) -> str:
    """Waits until <body data-audit> leaves `pending` for a final word."""
    page.wait_for_function(
        "final => final.includes(document.body.dataset.audit)", arg=list(FINAL), timeout=VERDICT_TIMEOUT_MS
    )
    return page.evaluate("document.body.dataset.audit")


def roll_checks(page: Page) -> list[tuple[str, str | None]]:
    """(data-nonce, data-check) of every roll element on the page."""
    return page.eval_on_selector_all(
        "[data-nonce]", "els => els.map(e => [e.getAttribute('data-nonce'), e.getAttribute('data-check')])"
    )


def first_failure(page: Page) -> int | None:
    element = page.query_selector("#first-failure")
    if element is None:
        return None
    found = re.search(r"\d+", element.inner_text())
    return int(found.group()) if found else None


def normalized(text: str) -> str:
    return " ".join(text.split())


class ServerCalls:
    """Every request a page makes from the moment `start` is called."""

    def __init__(self, page: Page) -> None:
        self.urls: list[str] = []
        self.recording = False
        page.on("request", lambda request: self.recording and self.urls.append(request.url))

    def start(self) -> None:
        self.recording = True

    def to_network(self) -> list[str]:
        return [u for u in self.urls if not u.startswith(("file:", "data:", "blob:", "about:"))]


# --- the checks ---


def demo_battles(env: Env, results: Results) -> list[tuple[str, str]]:
    """Plays the demo; (battle id, page link) for each battle it printed."""
    out = run([env.battlelog, "demo", "--resolver", env.resolver, "--data-dir", env.data_dir])
    (env.work / "demo.out").write_text(out)
    ids = re.findall(r"^=== .* — battle ([A-Za-z0-9_-]+)$", out, re.M)
    links = re.findall(r"https?://[^ \n]*/battles/[^ \n]*", out)
    by_id = {urllib.parse.urlsplit(link).path.rsplit("/", 1)[-1]: link for link in links}
    results.check(
        f"demo printed a page link for each of its {len(ids)} battles",
        len(ids) > 0 and sorted(by_id) == sorted(ids),
        f"battles {ids}, links {links}",
    )
    # The link must point at the web service `up` started (same origin).
    for link in links:
        results.check(
            f"demo link {link} is on the web service",
            link.startswith(env.web + "/battles/"),
            f"web service is {env.web}",
        )
    return [(battle, by_id[battle]) for battle in ids if battle in by_id]


def check_battle_pages(env: Env, browser: Browser, results: Results, battles: list[tuple[str, str]]) -> None:
    """a. Every demo battle's page verifies, every roll `ok`, every roll shown."""
    for index, (battle, link) in enumerate(battles):
        name = f"battle page {battle}"
        try:
            expected = roll_nonces(env.work / f"{battle}.jsonl")
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(link)
            verdict = wait_verdict(page)
            checks = roll_checks(page)
            results.check(f"{name}: data-audit verified", verdict == "verified", f"got {verdict!r}")
            results.check(
                f"{name}: {len(checks)} roll elements, every data-check ok",
                len(checks) > 0 and all(check == "ok" for _, check in checks),
                f"got {checks}",
            )
            missing = sorted(set(expected) - {nonce for nonce, _ in checks})
            results.check(
                f"{name}: each of the export's {len(expected)} rolls is on the page",
                len(expected) > 0 and not missing,
                f"nonces missing from the page: {missing}",
            )
            versions = [line["version"] for line in event_lines(env.work / f"{battle}.jsonl")]
            anchors = page.eval_on_selector_all(
                "[data-version]",
                "els => els.filter(e => e.id === 'v' + e.dataset.version).map(e => Number(e.dataset.version))",
            )
            unanchored = sorted(set(versions) - set(anchors))
            results.check(
                f"{name}: each of the export's {len(versions)} events has its permalink (id v<version>, data-version)",
                len(versions) > 0 and not unanchored,
                f"versions without one: {unanchored}",
            )
            if index == 0:
                env.shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(env.shots / "battle.png"), full_page=True)
            page.close()
        except Exception:
            results.crashed(name)


def check_forged_page(env: Env, browser: Browser, results: Results, battle: str, link: str) -> None:
    """a'. The page's verifier really checks: the same page, served with a
    forged export (one die changed, chain recomputed) in place of the real
    one, fails at the forged version. The forgery is put in between the
    server and the browser, wherever the page takes its export from: the
    HTML it embeds it in, or export.jsonl should the script fetch it."""
    name = f"battle page {battle} with a forged export"
    try:
        status, body = http_status(with_query(f"{env.web}/battles/{battle}/export.jsonl", k=share_key(link)))
        if not results.check(f"{name}: export.jsonl read", status == 200, f"HTTP {status}"):
            return
        served = env.work / f"{battle}.web.jsonl"
        served.write_text(body)
        forged, version = tamper(env, "die", served, "last-roll")
        original, forgery = body.rstrip("\n"), forged.read_text().rstrip("\n")
        substituted: list[str] = []

        def forge(route) -> None:
            reply = route.fetch()
            text = reply.text()
            if route.request.url.split("?")[0].endswith("/export.jsonl"):
                substituted.append("export.jsonl")
                route.fulfill(response=reply, body=forgery + "\n")
                return
            # An export inside HTML is escaped the one way a script element needs.
            escaped = (original.replace("<", "\\u003c"), forgery.replace("<", "\\u003c"))
            for embedded, replacement in [(original, forgery), escaped]:
                if embedded in text:
                    substituted.append("the page's HTML")
                    text = text.replace(embedded, replacement)
                    break
            route.fulfill(response=reply, body=text)

        page = browser.new_page()
        page.route(f"{env.web}/battles/**", forge)
        page.goto(link)
        verdict = wait_verdict(page)
        results.check(
            f"{name}: the forgery reached the page",
            len(substituted) > 0,
            "the export was found neither in the HTML nor fetched",
        )
        results.check(f"{name}: data-audit failed", verdict == "failed", f"got {verdict!r}")
        first = first_failure(page)
        results.check(f"{name}: #first-failure shows {version}", first == version, f"got {first}")
        bad_nonce = nonce_at(forged, version)
        marks = [check for nonce, check in roll_checks(page) if nonce == bad_nonce]
        results.check(f"{name}: the changed roll (nonce {bad_nonce}) is marked bad", "bad" in marks, f"got {marks}")
        page.close()
    except Exception:
        results.crashed(name)


def check_open_battle(env: Env, browser: Browser, results: Results) -> None:
    """b. A battle left open: `unrevealed`, its rolls `unrevealed`, none `bad`."""
    name = "open battle page"
    try:
        battle = run(
            [env.node, str(env.tools / "open-and-act.mjs"), env.resolver],
            {"BATTLELOG_TOKEN": token(env, "forum", "dev")},
        ).strip()
        name = f"open battle page {battle}"
        context = browser.new_context(extra_http_headers={"Authorization": f"Bearer {token(env, 'reader', 'dev')}"})
        page = context.new_page()
        page.goto(f"{env.web}/battles/{battle}")
        verdict = wait_verdict(page)
        checks = roll_checks(page)
        results.check(f"{name}: data-audit unrevealed", verdict == "unrevealed", f"got {verdict!r}")
        results.check(
            f"{name}: {len(checks)} roll elements, every data-check unrevealed, none bad",
            len(checks) > 0 and all(check == "unrevealed" for _, check in checks),
            f"got {checks}",
        )
        context.close()
    except Exception:
        results.crashed(name)


def choose_export(page: Page, path: Path, drop: bool = False) -> tuple[str, int | None, list[str]]:
    """Picks `path` in the file input (or drops it on the drop zone); the
    verdict, #first-failure and any request made meanwhile."""
    before = page.evaluate("document.body.dataset.audit ?? null")
    if before in FINAL:
        raise AssertionError(f"/verify claims {before!r} before any file is chosen")
    # The verifier's modules and its worker load when the page does; from
    # then on, checking a file must make no request.
    page.wait_for_function("() => document.documentElement.hasAttribute('data-verifier-ready')", timeout=VERDICT_TIMEOUT_MS)
    calls = ServerCalls(page)
    calls.start()
    if drop:
        # What a browser hands the page when a file is dragged in from the desktop.
        transfer = page.evaluate_handle(
            """([name, text]) => {
                const transfer = new DataTransfer();
                transfer.items.add(new File([text], name, { type: 'application/x-ndjson' }));
                return transfer;
            }""",
            [path.name, path.read_text()],
        )
        page.dispatch_event("#drop-zone", "drop", {"dataTransfer": transfer})
    else:
        page.set_input_files("#export-file", str(path))
    verdict = wait_verdict(page)
    return verdict, first_failure(page), calls.to_network()


def nonce_at(path: Path, version: int) -> str:
    line = next(line for line in event_lines(path) if line["version"] == version)
    return str(line["event"]["nonce"])


def check_verify(env: Env, browser: Browser, results: Results, source: Path, url: str, where: str, shoot: bool) -> None:
    """c/d. /verify (at `url`) on the export and two forgeries of it."""
    die, die_version = tamper(env, "die", source, "last-roll")
    dropped, drop_version = tamper(env, "drop", source, "last-action")
    # (label, file, dropped on the drop zone rather than chosen, verdict, first failure, roll marked bad)
    cases = [
        ("untampered export", source, False, "verified", None, None),
        (
            f"die at version {die_version} changed, chain recomputed",
            die, False, "failed", die_version, nonce_at(die, die_version),
        ),
        (f"version {drop_version} removed", dropped, False, "failed", drop_version, None),
        (f"die at version {die_version} changed, dropped on the drop zone", die, True, "failed", die_version, None),
    ]
    for label, path, drop, want, want_first, bad_nonce in cases:
        name = f"{where}: {label}"
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url)
            verdict, first, calls = choose_export(page, path, drop)
            checks = roll_checks(page)
            results.check(f"{name}: data-audit {want}", verdict == want, f"got {verdict!r}")
            if want == "verified":
                results.check(
                    f"{name}: {len(checks)} rolls listed, every data-check ok",
                    len(checks) > 0 and all(check == "ok" for _, check in checks),
                    f"got {checks}",
                )
            if want_first is not None:
                results.check(f"{name}: #first-failure shows {want_first}", first == want_first, f"got {first}")
            if bad_nonce is not None:
                marks = [check for nonce, check in checks if nonce == bad_nonce]
                results.check(
                    f"{name}: the changed roll (nonce {bad_nonce}) is marked bad", "bad" in marks, f"got {marks}"
                )
                if shoot:
                    env.shots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(env.shots / "verify-failed.png"), full_page=True)
            results.check(f"{name}: no request once the file is chosen", not calls, f"requests: {calls}")
            page.close()
        except Exception:
            results.crashed(name)
    check_posted_head(env, browser, results, source, url, where)


def check_posted_head(env: Env, browser: Browser, results: Results, source: Path, url: str, where: str) -> None:
    """/verify with the head hash a forum posted: an export cut short fails."""
    events = event_lines(source)
    head, last = events[-1]["hash"], events[-1]["version"]
    cut = source.with_suffix(".cut.jsonl")
    raw = [line for line in source.read_text().splitlines() if line.strip()]
    cut.write_text("".join(line + "\n" for line in raw if json.loads(line).get("version") != last))
    for label, path, want, want_first in [
        ("posted head, whole export", source, "verified", None),
        (f"posted head, export cut before version {last}", cut, "failed", last),
    ]:
        name = f"{where}: {label}"
        try:
            page = browser.new_page()
            page.goto(url)
            page.fill("#head", head)
            verdict, first, _ = choose_export(page, path)
            results.check(f"{name}: data-audit {want}", verdict == want, f"got {verdict!r}")
            if want_first is not None:
                results.check(f"{name}: #first-failure shows {want_first}", first == want_first, f"got {first}")
            page.close()
        except Exception:
            results.crashed(name)


def check_access(env: Env, results: Results, battles: list[tuple[str, str]]) -> None:
    """e. Who may read a battle page and its export."""
    battle, link = battles[0]
    page = f"{env.web}/battles/{battle}"
    key = share_key(link)
    reader = {"Authorization": f"Bearer {token(env, 'reader', 'dev')}"}
    other_tenant = {"Authorization": f"Bearer {token(env, 'reader', 'elsewhere')}"}
    cases = [
        ("no credential", page, {}, 401),
        ("a wrong k", with_query(page, k=another_key(key)), {}, 403),
        ("a reader token of another tenant", page, other_tenant, 404),
        ("the link's k", with_query(page, k=key), {}, 200),
        ("a reader token of its tenant", page, reader, 200),
        ("a garbage bearer token", page, {"Authorization": "Bearer not-a-token"}, 401),
        ("an unknown battle, reader token of the tenant", f"{env.web}/battles/b-{'0' * 32}", reader, 404),
        ("export, no credential", f"{page}/export.jsonl", {}, 401),
        ("export, a wrong k", with_query(f"{page}/export.jsonl", k=another_key(key)), {}, 403),
        ("export, a reader token of another tenant", f"{page}/export.jsonl", other_tenant, 404),
        ("export, the link's k", with_query(f"{page}/export.jsonl", k=key), {}, 200),
        ("export, a reader token of its tenant", f"{page}/export.jsonl", reader, 200),
        ("/verify, no credential", f"{env.web}/verify", {}, 200),
    ]
    if len(battles) > 1:
        # A share key opens its own battle only.
        other_battle, _ = battles[1]
        cases.append(("another battle's k", with_query(f"{env.web}/battles/{other_battle}", k=key), {}, 403))
    for label, url, headers, want in cases:
        name = f"access {battle}: {label}"
        try:
            status, body = http_status(url, headers)
            detail = f"HTTP {status}: {body.strip()[:200]!r}"
            ok = status == want and (want < 400 or body.strip() != "")  # a refusal says why
            results.check(f"{name} → {want}", ok, detail)
        except Exception:
            results.crashed(name)
    # The web's export is the journal's: the same versions and hashes as the CLI's.
    name = f"export {battle} over the web matches the CLI's"
    try:
        status, body = http_status(with_query(f"{page}/export.jsonl", k=key))
        web_lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        web_chain = [(line["version"], line["hash"]) for line in web_lines if "version" in line]
        cli_chain = [(line["version"], line["hash"]) for line in event_lines(env.work / f"{battle}.jsonl")]
        results.check(name, status == 200 and web_chain == cli_chain and len(cli_chain) > 0, f"HTTP {status}")
    except Exception:
        results.crashed(name)


def check_language(env: Env, browser: Browser, results: Results, battle: str, link: str) -> None:
    """f. ?lang=ru shows the Russian summaries, ?lang=en the English ones."""
    pairs = summaries(env.work / f"{battle}.jsonl")
    differing = [(ru, en) for ru, en in pairs if ru != en]
    if not results.check(
        f"language {battle}: the export has summaries that differ by language", len(differing) > 0, f"got {pairs}"
    ):
        return
    for lang in ("ru", "en"):
        name = f"language {battle}: ?lang={lang}"
        try:
            page = browser.new_page()
            page.goto(with_query(link, lang=lang))
            wait_verdict(page)
            text = normalized(page.inner_text("body"))
            shown = [(ru, en)[lang == "en"] for ru, en in pairs]
            hidden = [(en, ru)[lang == "en"] for ru, en in differing]
            missing = [s for s in shown if normalized(s) not in text]
            leaked = [s for s in hidden if normalized(s) in text]
            results.check(f"{name}: each of {len(shown)} summaries in {lang}", not missing, f"missing {missing}")
            results.check(f"{name}: none in the other language", not leaked, f"shown {leaked}")
            page.close()
        except Exception:
            results.crashed(name)


def more_checks() -> list[tuple[str, object]]:
    """The checks kept in their own files beside this one: every
    `checks_*.py` here, in name order, each with
    `run(env, browser, results, battles)` (it may `import browser_tests` for
    the helpers above)."""
    import importlib

    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    found = []
    for path in sorted(here.glob("checks_*.py")):
        module = importlib.import_module(path.stem)
        found.append((path.stem, module.run))
    return found


def main() -> int:
    env = Env.from_environ()
    results = Results()
    # Stale pictures of an earlier run must not pass for this run's.
    for shot in ("battle.png", "verify-failed.png"):
        (env.shots / shot).unlink(missing_ok=True)
    try:
        battles = demo_battles(env, results)
        for battle, _ in battles:
            export(env, battle)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, chromium_sandbox=False, args=CHROMIUM_ARGS
            )
            print(f"browser-tests: Chromium {browser.version}", file=sys.stderr)
            # BROWSER_TESTS_ONLY=checks_checkpoint,core runs only the named
            # checks files (`core`: the checks of this file), for a helper
            # who changed one of them; unset, everything runs.
            only = {n.strip() for n in os.environ.get("BROWSER_TESTS_ONLY", "").split(",") if n.strip()}
            if battles and (not only or "core" in only):
                check_battle_pages(env, browser, results, battles)
                check_forged_page(env, browser, results, *battles[0])
                check_access(env, results, battles)
                check_language(env, browser, results, *battles[0])
                source = env.work / f"{battles[0][0]}.jsonl"
                check_verify(env, browser, results, source, f"{env.web}/verify", "/verify", shoot=True)
            if not only or "core" in only:
                check_open_battle(env, browser, results)
            for name, check in more_checks():
                if only and name not in only:
                    continue
                try:
                    check(env, browser, results, battles)
                except Exception:
                    results.crashed(name)
            browser.close()
    except Exception:
        results.crashed("setup")
    for shot in ("battle.png", "verify-failed.png"):
        if not os.environ.get("BROWSER_TESTS_ONLY") or "core" in os.environ["BROWSER_TESTS_ONLY"]:
            results.check(f"screenshot {shot} saved", (env.shots / shot).is_file())
    print(f"browser-tests: {results.passed} passed, {results.failed} failed")
    return 0 if results.failed == 0 and results.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
