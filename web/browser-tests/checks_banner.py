"""The verdict a judge reads first (issue 39, part 1, and finding 3's
verdicts after a failure), in Chromium against `battlelog up`:

  - the battle page, ?lang=en and ?lang=ru, on a 390 px phone: `#verdict`
    comes before any event in document order, its top is on the first
    screen, `data-verdict="verified"` (the site pins up's roller key), in
    the page's language, with the technical detail in a <details>;
  - the battle page with `?head=abc`: an input error naming the head field
    (the field marked aria-invalid), the battle not failed;
  - /verify (on a phone too): the demo export `verified`; one die changed
    `failed`, naming the version (a link to it) and the check; a file that
    is not an export `not-an-export`, not "the log does not check out"; a
    mistyped roller key `key-mismatch`, and the row of pinned keys shows
    the key typed, not the site's; "12345" typed as the key an input error
    naming the field; the export cut before its last event `cut-short`,
    with the posted head and without;
  - the offline verifier (pages/offline.html), ?lang=ru: in Russian, and
    `verified-unpinned`, never `verified`, for the demo export and for the
    same export re-signed with a stranger's key (finding 5).
Expected values come from `battlelog export`, `battlelog roller-key` and
tamper.mjs, never from the page under test.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path

import browser_tests as bt

REPO = Path(__file__).resolve().parents[2]
VERIFIER = REPO / "web" / "verifier"
PHONE = {"width": 390, "height": 844}
CYRILLIC = re.compile("[а-яё]", re.I)
FINAL_VERDICTS = ["verified", "verified-unpinned", "unrevealed", "failed", "not-an-export", "key-mismatch", "cut-short", "input-error"]


def wait_banner(page) -> str:
    page.wait_for_function(
        "kinds => kinds.includes(document.getElementById('verdict')?.dataset.verdict)",
        arg=FINAL_VERDICTS,
        timeout=bt.VERDICT_TIMEOUT_MS,
    )
    return page.evaluate("document.getElementById('verdict').dataset.verdict")


def banner(page) -> dict:
    return page.evaluate(
        """() => {
            const v = document.getElementById('verdict');
            const first = document.querySelector('.event');
            const box = v.getBoundingClientRect();
            return {
                kind: v.dataset.verdict,
                version: v.dataset.verdictVersion ?? null,
                check: v.dataset.verdictCheck ?? null,
                headline: document.getElementById('verdict-headline').textContent,
                why: document.getElementById('verdict-why').textContent,
                link: document.querySelector('#verdict-headline a')?.getAttribute('href') ?? null,
                details: !!v.querySelector('details summary'),
                beforeEvents: !first || !!(v.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING),
                top: box.top + window.scrollY,
                lang: document.documentElement.lang,
            };
        }"""
    )


def choose(browser, url: str, path: Path, fill: dict[str, str] | None = None) -> tuple[object, object, dict]:
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.goto(url)
    page.wait_for_function("() => document.documentElement.hasAttribute('data-verifier-ready')", timeout=bt.VERDICT_TIMEOUT_MS)
    for selector, value in (fill or {}).items():
        page.fill(selector, value)
    page.set_input_files("#export-file", str(path))
    wait_banner(page)
    return context, page, banner(page)


def check_battle_page(env: bt.Env, browser, results: bt.Results, battle: str, link: str) -> None:
    for lang in ("en", "ru"):
        name = f"verdict banner of {battle} ?lang={lang} at 390 px"
        try:
            context = browser.new_context(viewport=PHONE)
            page = context.new_page()
            page.goto(bt.with_query(link, lang=lang))
            kind = wait_banner(page)
            got = banner(page)
            results.check(f"{name}: data-verdict verified", kind == "verified", f"{got}")
            results.check(f"{name}: before every event in document order", got["beforeEvents"], f"{got}")
            results.check(f"{name}: on the first screen (top {got['top']:.0f} px of {PHONE['height']})", got["top"] < PHONE["height"] - 60, f"{got}")
            results.check(f"{name}: the technical detail is a <details>", got["details"], f"{got}")
            words = got["headline"] + got["why"]
            if lang == "ru":
                results.check(f"{name}: in Russian", CYRILLIC.search(words) is not None and "verified" not in words, words)
            else:
                results.check(f"{name}: in English", CYRILLIC.search(words) is None and words.strip() != "", words)
            context.close()
        except Exception:
            results.crashed(name)
    name = f"battle page {battle} with ?head=abc"
    try:
        context = browser.new_context(viewport=PHONE)
        page = context.new_page()
        page.goto(bt.with_query(link, head="abc", lang="en"))
        kind = wait_banner(page)
        audit = bt.wait_verdict(page)
        got = banner(page)
        invalid = page.evaluate("document.getElementById('posted-head').getAttribute('aria-invalid')")
        results.check(f"{name}: an input error, not a failed battle", kind == "input-error" and audit != "failed", f"{kind}, data-audit {audit}")
        results.check(f"{name}: the verdict names the head field", "head" in got["headline"].lower(), got["headline"])
        results.check(f"{name}: the field is marked aria-invalid", invalid == "true", f"{invalid}")
        context.close()
    except Exception:
        results.crashed(name)


def check_verify(env: bt.Env, browser, results: bt.Results, source: Path) -> None:
    url = f"{env.web}/verify"
    key = bt.run([env.battlelog, "roller-key", "--master-key-file", str(Path(env.data_dir) / "roller" / "master.key")]).strip()
    typo = key[:-1] + ("0" if key[-1] != "0" else "1")
    die, die_version = bt.tamper(env, "die", source, "last-roll")
    events = bt.event_lines(source)
    head = events[-1]["hash"]
    cut = source.with_suffix(".banner-cut.jsonl")
    raw = [line for line in source.read_text().splitlines() if line.strip()]
    cut.write_text("".join(line + "\n" for line in raw if f'"version":{events[-1]["version"]},' not in line.replace(" ", "")))
    junk = source.with_suffix(".not-an-export.txt")
    junk.write_text("Dear judge,\nhere is the battle you asked for.\n")
    cases = [
        ("the demo export", "", source, {}, "verified"),
        (f"die at version {die_version} changed", "", die, {}, "failed"),
        ("a text file, ?lang=ru", "?lang=ru", junk, {}, "not-an-export"),
        ("a mistyped roller key", "", source, {"#roller-key-input": typo}, "key-mismatch"),
        ("'12345' typed as the roller key", "", source, {"#roller-key-input": "12345"}, "input-error"),
        ("the export cut before its last event", "", cut, {}, "cut-short"),
        ("the export cut before its last event, the posted head typed", "", cut, {"#head": head}, "cut-short"),
    ]
    for label, query, path, fill, want in cases:
        name = f"/verify banner: {label}"
        try:
            context, page, got = choose(browser, url + query, path, fill)
            results.check(f"{name}: data-verdict {want}", got["kind"] == want, f"{got}")
            results.check(f"{name}: the banner is on the first screen at 390 px", got["top"] < PHONE["height"] - 60, f"{got}")
            if want == "failed":
                results.check(
                    f"{name}: names version {die_version}, links to it, names the dice check",
                    got["version"] == str(die_version) and (got["link"] or "").endswith(f"#v{die_version}") and got["check"] == "dice" and "dice" in got["headline"],
                    f"{got}",
                )
            if want == "not-an-export":
                results.check(f"{name}: says it in Russian, not 'журнал не сходится'", CYRILLIC.search(got["headline"]) is not None and "не сходится" not in got["headline"] + got["why"], f"{got}")
            if want == "key-mismatch":
                pinned = page.evaluate("document.getElementById('roller-keys-pinned')?.textContent ?? ''")
                results.check(f"{name}: the pinned-keys row shows the key typed, not the site's", typo in pinned and key not in pinned, pinned)
            if want == "input-error":
                results.check(f"{name}: names the roller key field", "roller key" in got["headline"].lower(), got["headline"])
            context.close()
        except Exception:
            results.crashed(name)


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def check_offline(env: bt.Env, browser, results: bt.Results, source: Path) -> None:
    server = None
    try:
        handler = functools.partial(Quiet, directory=str(VERIFIER))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/pages/offline.html?lang=ru"
        resigned, _ = bt.tamper(env, "resign", source, "0")
        for label, path in [("the demo export", source), ("the export re-signed with a stranger's key", resigned)]:
            name = f"offline verifier ?lang=ru: {label}"
            try:
                context, page, got = choose(browser, url, path)
                results.check(f"{name}: verified-unpinned, never verified", got["kind"] == "verified-unpinned", f"{got}")
                text = page.inner_text("main")
                results.check(f"{name}: the page is Russian (lang ru, labels and verdict)", got["lang"] == "ru" and CYRILLIC.search(got["headline"]) is not None and "Verify a battle export" not in text, f"{got['lang']}: {text[:200]!r}")
                context.close()
            except Exception:
                results.crashed(name)
    finally:
        if server:
            server.shutdown()
            server.server_close()


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    if not battles:
        results.check("verdict banner: a demo battle to check", False)
        return
    battle, link = battles[0]
    check_battle_page(env, browser, results, battle, link)
    source = env.work / f"{battle}.jsonl"
    check_verify(env, browser, results, source)
    check_offline(env, browser, results, source)
