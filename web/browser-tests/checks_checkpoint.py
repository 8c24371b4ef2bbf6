"""Browser checks of issue 23 (docs/protocol.md §5: signed checkpoints) against
the running `battlelog up` (browser_tests.py runs `run` below):

  - `/.well-known/battlelog/log-key` serves, to anyone with no credential,
    the journal's log key — the one `battlelog log-key` prints (from the
    journal's private key file when `up` wrote one, else via the resolver);
  - a demo battle's page: its export ends with a trailer, the `checkpoint`
    check is `ok` (in English and Russian), its log key is `pinned` and is
    that key, and the page shows the trailer's signed checkpoint in
    `pre#checkpoint-note`, with a copy button that copies it exactly;
  - /verify: the page's own export.jsonl verifies with its checkpoint shown
    to keep; the same export with its trailer's head edited (version, then
    hash) and one cut short (last event dropped, trailer kept) fail where
    the export ends, the `checkpoint` check `bad` naming the head; with a
    log key typed that is not the journal's, the trailer fails as not the
    site's key.

Expected values come from the CLI and the exports, never from the page
under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import browser_tests as bt


def log_key(env: bt.Env) -> str:
    """The journal's verifier key, as the CLI prints it: from the private key
    the journal generated under `up`'s data dir (offline), else asked of the
    resolver."""
    for path in sorted(Path(env.data_dir).rglob("log.key")):
        return bt.run([env.battlelog, "log-key", "--key", str(path)]).strip()
    return bt.run([env.battlelog, "log-key", "--resolver", env.resolver, "--data-dir", env.data_dir]).strip()


def checks(page) -> dict[str, tuple[str, str]]:
    return {
        name: (check, text)
        for name, check, text in page.eval_on_selector_all(
            "#checks li[data-check-name]",
            "els => els.map(e => [e.dataset.checkName, e.getAttribute('data-check'), e.textContent])",
        )
    }


def split_trailer(text: str) -> tuple[list[dict], dict | None]:
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    if lines and "version" not in lines[-1]:
        return lines[:-1], lines[-1]
    return lines, None


def write_export(path: Path, events: list[dict], trailer: dict | None) -> Path:
    lines = events + ([trailer] if trailer is not None else [])
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def check_well_known(env: bt.Env, results: bt.Results, key: str) -> None:
    name = "/.well-known/battlelog/log-key"
    try:
        status, body = bt.http_status(f"{env.web}/.well-known/battlelog/log-key")
        results.check(f"{name}: 200 with no credential", status == 200, f"HTTP {status}: {body[:200]}")
        if status == 200:
            results.check(f"{name}: the journal's key", json.loads(body).get("keys") == [key], f"{body[:300]} vs {key}")
    except Exception:
        results.crashed(name)


def check_battle_page(env: bt.Env, browser, results: bt.Results, battle: str, link: str, key: str) -> None:
    for lang, says in (("en", "Signed checkpoint: the last event"), ("ru", "Подписанный чекпойнт: последнее событие")):
        name = f"checkpoint of {battle} ?lang={lang}"
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            try:
                context.grant_permissions(["clipboard-read", "clipboard-write"], origin=env.web)
            except Exception:
                pass  # the copy falls back to selecting the text; checked below either way
            page = context.new_page()
            page.goto(bt.with_query(link, lang=lang))
            verdict = bt.wait_verdict(page)
            found = checks(page)
            check, text = found.get("checkpoint", ("", ""))
            results.check(f"{name}: verified", verdict == "verified", verdict)
            results.check(f"{name}: the checkpoint check ok and in the page's language", check == "ok" and text.startswith(says), f"{check}: {text}")
            results.check(f"{name}: the log key shown is the journal's, pinned", page.text_content("#log-key") == key and page.get_attribute("body", "data-log-key") == "pinned",
                          f"{page.text_content('#log-key')!r} {page.get_attribute('body', 'data-log-key')!r}")
            embedded = page.evaluate("document.getElementById('battle-export').textContent")
            _, trailer = split_trailer(embedded)
            note = page.text_content("#checkpoint-note")
            results.check(f"{name}: the export ends with a trailer", trailer is not None, embedded[-300:])
            if trailer is not None:
                results.check(f"{name}: pre#checkpoint-note is the trailer's signed checkpoint", note == trailer["checkpoint"], f"{note!r} vs {trailer['checkpoint']!r}")
                results.check(f"{name}: the note is the journal's (its origin first, signed)", note.split("\n")[0] == key.split("+")[0] and "\n\n\u2014 " in note, repr(note))
            page.click("#copy-checkpoint")
            page.wait_for_function("() => document.getElementById('copy-checkpoint').hasAttribute('data-copied')", timeout=10_000)
            how = page.get_attribute("#copy-checkpoint", "data-copied")
            copied = page.evaluate("navigator.clipboard.readText()") if how == "yes" else page.evaluate("String(getSelection())")
            results.check(f"{name}: the copy button copies the note exactly ({how})", copied == note, f"{copied!r}")
            context.close()
        except Exception:
            results.crashed(name)


def check_verify(env: bt.Env, browser, results: bt.Results, battle: str, link: str, key: str) -> None:
    status, body = bt.http_status(bt.with_query(f"{env.web}/battles/{battle}/export.jsonl", k=bt.share_key(link)))
    if not results.check("/verify checkpoint: export.jsonl read", status == 200, f"HTTP {status}"):
        return
    events, trailer = split_trailer(body)
    if not results.check("/verify checkpoint: export.jsonl ends with a trailer", trailer is not None, body[-300:]):
        return
    last = events[-1]["version"]
    work = env.work
    edited_version = dict(trailer, head=dict(trailer["head"], version=trailer["head"]["version"] - 1))
    edited_hash = dict(trailer, head=dict(trailer["head"], hash="00" * 32))
    cases = [
        ("untampered", write_export(work / f"{battle}.trailer.jsonl", events, trailer), None, "verified", None, "ok", None),
        ("trailer head version edited", write_export(work / f"{battle}.head-version.jsonl", events, edited_version), None, "failed", last + 1, "bad", "head-not-last-event"),
        ("trailer head hash edited", write_export(work / f"{battle}.head-hash.jsonl", events, edited_hash), None, "failed", last + 1, "bad", "head-not-last-event"),
        ("cut short, trailer kept", write_export(work / f"{battle}.cut.jsonl", events[:-1], trailer), None, "failed", last, "bad", "head-not-last-event"),
        ("another log key pinned", work / f"{battle}.trailer.jsonl", "other.example/log+00000000+AQ==", "failed", last + 1, "bad", "log-key-not-trusted"),
    ]
    for label, path, pinned, want, want_first, want_check, what in cases:
        name = f"/verify checkpoint: {label}"
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{env.web}/verify" + (f"?log_key={pinned}" if pinned else ""))
            if pinned:
                page.fill("#log-key-input", pinned)
            verdict, first, _ = bt.choose_export(page, path)
            check, text = checks(page).get("checkpoint", ("", ""))
            results.check(f"{name}: data-audit {want}", verdict == want, f"got {verdict!r}")
            results.check(f"{name}: the checkpoint check {want_check}", check == want_check, f"{check}: {text}")
            if want_first is not None:
                results.check(f"{name}: #first-failure shows {want_first}", first == want_first, f"got {first}")
            if what is not None:
                problems = page.eval_on_selector_all(
                    "#client-problems li[data-problem='checkpoint']", "els => els.map(e => e.textContent)"
                )
                names = {"head-not-last-event": "signed head is not the export", "log-key-not-trusted": "log key is not a trusted one"}
                results.check(f"{name}: the check names what failed", names[what] in text, text)
                results.check(f"{name}: a checkpoint problem is listed", len(problems) > 0, f"{problems}")
            else:
                note = page.text_content("#checkpoint-note")
                hidden = page.get_attribute("#checkpoint", "hidden")
                results.check(f"{name}: the checkpoint to keep is shown", note == trailer["checkpoint"] and hidden is None, f"{note!r}, hidden={hidden!r}")
                results.check(f"{name}: pinned to the site's log key", page.text_content("#log-key") == key and page.get_attribute("body", "data-log-key") == "pinned",
                              f"{page.text_content('#log-key')!r}")
            page.close()
        except Exception:
            results.crashed(name)


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    try:
        key = log_key(env)
    except Exception:
        results.crashed("battlelog log-key")
        return
    check_well_known(env, results, key)
    if battles:
        battle, link = battles[0]
        check_battle_page(env, browser, results, battle, link, key)
        check_verify(env, browser, results, battle, link, key)
