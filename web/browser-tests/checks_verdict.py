"""The verdict says what it checked, and /verify reads as a judge needs
(issue 21, findings 8 and 9).

Battle page (a demo battle), in English and Russian:
  - `#checks` lists dice, chain, commitments, signatures, outcomes, head,
    checkpoint (docs/protocol.md §5: the export's trailer) and drawing; all but
    the head `ok`; the dice line counts the export's rolls
    and the chain line its events; the Russian list is in Russian;
  - the verdict is announced (`aria-live`);
  - the head field: `?head=<the export's last hash>` pre-fills it and the
    head check is `ok`; a head the log does not hold, typed in, fails the
    page.
/verify:
  - idle until a file is chosen (`data-audit="idle"`, not "checking…");
  - under `?lang=ru` the demo export lists every action's Russian summary
    (and no English one), every dispute's reason and ruling's text;
  - a forged export's problem lines link to their version and name their
    check in Russian.
Expected values come from `battlelog export` and tamper.mjs.
"""

from __future__ import annotations

import re

import browser_tests as bt

ALL_CHECKS = ["dice", "chain", "commitments", "signatures", "outcomes", "head", "checkpoint", "drawing"]
CYRILLIC = re.compile("[а-яё]", re.I)


def checks(page) -> dict[str, tuple[str, str]]:
    return {
        name: (check, text)
        for name, check, text in page.eval_on_selector_all(
            "#checks li[data-check-name]",
            "els => els.map(e => [e.dataset.checkName, e.getAttribute('data-check'), e.textContent])",
        )
    }


def check_battle_page(env: bt.Env, browser, results: bt.Results, battle: str, link: str) -> None:
    lines = bt.event_lines(env.work / f"{battle}.jsonl")
    rolls = sum(1 for line in lines if line["event_type"] == "DiceRolled")
    head = lines[-1]["hash"]
    for lang in ("en", "ru"):
        name = f"verdict of {battle} ?lang={lang}"
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(bt.with_query(link, lang=lang))
            verdict = bt.wait_verdict(page)
            found = checks(page)
            results.check(f"{name}: verified", verdict == "verified", verdict)
            results.check(
                f"{name}: #checks lists {', '.join(ALL_CHECKS)}",
                sorted(found) == sorted(ALL_CHECKS),
                f"listed {sorted(found)}",
            )
            bad = {n: c for n, (c, _) in found.items() if n != "head" and c != "ok"}
            results.check(f"{name}: every check but the head ok", not bad, f"{bad}")
            dice_text = found.get("dice", ("", ""))[1]
            chain_text = found.get("chain", ("", ""))[1]
            results.check(
                f"{name}: the dice line counts the export's {rolls} rolls, the chain line its {len(lines)} events",
                re.search(rf"\b{rolls}\b", dice_text) is not None and re.search(rf"\b{len(lines)}\b", chain_text) is not None,
                f"{dice_text!r} / {chain_text!r}",
            )
            texts = " ".join(text for _, text in found.values())
            if lang == "ru":
                results.check(f"{name}: the checks are in Russian", all(CYRILLIC.search(t) for _, t in found.values()), texts)
            else:
                results.check(f"{name}: the checks are in English", not CYRILLIC.search(texts), texts)
            live = page.evaluate("document.querySelector('.verdict')?.getAttribute('aria-live')")
            results.check(f"{name}: the verdict is announced (aria-live)", live in ("polite", "assertive"), f"{live}")
            page.close()
        except Exception:
            results.crashed(name)
    name = f"posted head of {battle}"
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(bt.with_query(link, head=head))
        verdict = bt.wait_verdict(page)
        prefilled = page.input_value("#posted-head")
        head_check = checks(page).get("head", ("", ""))[0]
        results.check(f"{name}: ?head= pre-fills the field", prefilled == head, prefilled)
        results.check(f"{name}: the posted head checks ok and the page verifies", head_check == "ok" and verdict == "verified", f"{head_check}, {verdict}")
        # A head this log does not hold (what a battle cut short shows).
        page.fill("#posted-head", "ab" * 32)
        page.dispatch_event("#posted-head", "change")
        page.wait_for_function("() => document.body.dataset.audit === 'failed'", timeout=bt.VERDICT_TIMEOUT_MS)
        head_check = checks(page).get("head", ("", ""))[0]
        results.check(f"{name}: a head the log does not hold fails the page at the head check", head_check == "bad", head_check)
        page.close()
    except Exception:
        results.crashed(name)


def check_verify_page(env: bt.Env, browser, results: bt.Results, battle: str) -> None:
    source = env.work / f"{battle}.jsonl"
    lines = bt.event_lines(source)
    name = "/verify ?lang=ru"
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{env.web}/verify?lang=ru")
        idle = page.evaluate("document.body.dataset.audit")
        results.check(f"{name}: idle until a file is chosen", idle == "idle", f"data-audit {idle!r}")
        verdict, _, _ = bt.choose_export(page, source)
        text = bt.normalized(page.inner_text("#results"))
        wanted = [
            (line["version"], line["event"].get(field))
            for line in lines
            for field in {"ActionResolved": ["summary_ru"], "DisputeRaised": ["reason"], "JudgeRuling": ["text"]}.get(line["event_type"], [])
        ]
        missing = [v for v, said in wanted if said and bt.normalized(said) not in text]
        english = [
            line["version"] for line in lines
            if line["event_type"] == "ActionResolved"
            and line["event"].get("summary_en") != line["event"].get("summary_ru")
            and bt.normalized(line["event"]["summary_en"]) in text
        ]
        results.check(f"{name}: verified", verdict == "verified", verdict)
        results.check(
            f"{name}: each of {len(wanted)} summaries, reasons and ruling texts listed",
            len(wanted) > 0 and not missing,
            f"missing at versions {missing}",
        )
        results.check(f"{name}: no English summary on the Russian page", not english, f"versions {english}")
        page.close()

        forged, version = bt.tamper(env, "die", source, "first-roll")
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{env.web}/verify?lang=ru")
        verdict, first, _ = bt.choose_export(page, forged)
        problems = page.eval_on_selector_all(
            "#client-problems li", "els => els.map(e => [e.querySelector('a')?.getAttribute('href') ?? '', e.textContent])"
        )
        results.check(f"{name}, a die forged at #v{version}: failed there", verdict == "failed" and first == version, f"{verdict} at {first}")
        results.check(
            f"{name}, a die forged at #v{version}: its problem line links to #v{version} and names its check in Russian",
            any(href.endswith(f"#v{version}") and CYRILLIC.search(text) for href, text in problems),
            f"{problems}",
        )
        page.close()
    except Exception:
        results.crashed(name)


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    if not battles:
        results.check("verdict checks: a demo battle to check", False)
        return
    battle, link = battles[0]
    check_battle_page(env, browser, results, battle, link)
    # A battle with a dispute or a ruling when the demo has one.
    disputed = next(
        (b for b, _ in battles if any(l["event_type"] in ("DisputeRaised", "JudgeRuling") for l in bt.event_lines(env.work / f"{b}.jsonl"))),
        battle,
    )
    check_verify_page(env, browser, results, disputed)
