"""Counts in plain English and Russian (issue 39, third round, part 2), in
Chromium against `battlelog up`, on the demo's battles:

  - English: "1 commitment", never "1 commitments" (nor 1 rolls, events,
    seeds, actions, dice, records, summaries, places);
  - Russian: each count's noun in its form for the number (1 бросок,
    2 броска, 5 бросков; the rule written out here, not taken from the
    page), and the count of rolls is printed as such;
  - /verify?lang=ru names each event's type in Russian, never the raw
    `DiceRolled`, `JudgeRuling` (the export's event types);
  - the checkpoint's root in the encoding `battlelog audit --json` prints
    (hex), the note's base64 beside it.
Expected counts come from `battlelog export`, never from the page.
"""

from __future__ import annotations

import json
import re

import browser_tests as bt

EN_WRONG = re.compile(r"(?<![\d.])1 (rolls|dice|events|commitments|seeds|actions|records|summaries|places)\b")
RU_NOUNS = {
    "бросок": ("бросок", "броска", "бросков"),
    "событие": ("событие", "события", "событий"),
    "обязательство": ("обязательство", "обязательства", "обязательств"),
    "действие": ("действие", "действия", "действий"),
    "кость": ("кость", "кости", "костей"),
}
RU_COUNTED = re.compile(r"(?<!из )(?<![\d.])(\d+) (" + "|".join(f for forms in RU_NOUNS.values() for f in forms) + r")\b")


def russian_form(n: int, forms: tuple[str, str, str]) -> str:
    """CLDR's Russian cardinal rule: one, few, many."""
    if n % 10 == 1 and n % 100 != 11:
        return forms[0]
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return forms[1]
    return forms[2]


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    if not battles:
        results.check("plurals: a demo battle to check", False)
        return
    check_root(env, browser, results, *battles[0])
    check_type_names(env, browser, results, battles[0][0])
    for battle, link in battles:
        rolls = sum(1 for line in bt.event_lines(env.work / f"{battle}.jsonl") if line["event_type"] == "DiceRolled")
        for lang in ("en", "ru"):
            name = f"plurals {battle} ?lang={lang}"
            try:
                page = browser.new_page()
                page.goto(bt.with_query(link, lang=lang))
                bt.wait_verdict(page)
                text = page.evaluate("document.body.innerText")
                if lang == "en":
                    wrong = EN_WRONG.findall(text)
                    results.check(f"{name}: no '1 <plural>'", not wrong, str(wrong))
                    want = f"{rolls} roll{'' if rolls == 1 else 's'}"
                    results.check(f"{name}: the rolls counted as '{want}'", want in text, text[:300])
                else:
                    wrong = [
                        f"{n} {noun}"
                        for n, noun in RU_COUNTED.findall(text)
                        for forms in RU_NOUNS.values()
                        if noun in forms and noun != russian_form(int(n), forms)
                    ]
                    results.check(f"{name}: each count's noun in its form", not wrong, str(wrong))
                    want = f"{rolls} {russian_form(rolls, RU_NOUNS['бросок'])}"
                    results.check(f"{name}: the rolls counted as '{want}'", want in text, text[:300])
                page.close()
            except Exception:
                results.crashed(name)


def check_root(env: bt.Env, browser, results: bt.Results, battle: str, link: str) -> None:
    name = f"root encoding {battle}"
    try:
        # Exported again now: the trailer carries the journal's newest
        # checkpoint, and the checks run before this one (checks_disputes,
        # checks_page) journal battles of their own, so the export taken at
        # the start has an older root than the page's.
        fresh = env.work / f"{battle}.root.jsonl"
        fresh.write_text(bt.run([env.battlelog, "export", battle, "--resolver", env.resolver, "--data-dir", env.data_dir]))
        audit = json.loads(
            bt.run([env.battlelog, "audit", "--file", str(fresh), "--accept-any-roller-key", "--json"])
        )
        root = audit["trailer"]["root_hash"]
        for lang in ("en", "ru"):
            page = browser.new_page()
            page.goto(bt.with_query(link, lang=lang))
            bt.wait_verdict(page)
            line = page.eval_on_selector_all("[data-check-name='checkpoint']", "els => els.map(e => e.textContent).join(' ')")
            results.check(f"{name} ?lang={lang}: the checkpoint line shows the root as the CLI prints it ({root})", root in line, line)
            page.close()
    except Exception:
        results.crashed(name)


def check_type_names(env: bt.Env, browser, results: bt.Results, battle: str) -> None:
    name = f"event type names {battle} on /verify?lang=ru"
    try:
        source = env.work / f"{battle}.jsonl"
        types = {line["event_type"] for line in bt.event_lines(source)}
        page = browser.new_page()
        page.goto(f"{env.web}/verify?lang=ru")
        bt.choose_export(page, source)
        titles = page.eval_on_selector_all(".event-title", "els => els.map(e => e.textContent.trim())")
        raw = sorted({title for title in titles if title in types})
        results.check(f"{name}: every event titled", len(titles) > 0, f"{titles}")
        results.check(f"{name}: no raw type name ({', '.join(sorted(types))})", not raw, f"shown raw: {raw}")
        page.close()
    except Exception:
        results.crashed(name)
