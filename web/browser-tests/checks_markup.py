"""No markup leaks on the judge's pages (issue 39, third round, part 1), in
Chromium against `battlelog up`:

  - a summary's dice not counted (`[~~2~~, 6, 4, 4]` in the record, the
    forum's Markdown) are drawn as <s>/<del> elements, and no `~~` shows as
    text: on the battle page (en, ru), its final view (`?view=final`) and
    `/verify`; the page still ends `verified` (its own check of what is
    drawn reads the struck dice back);
  - a command in the page's own text (the checkpoint's "why keep it",
    /verify's introduction) is a <code> element: no backtick shows;
  - a sheet's nested values (a demo battle's abilities) are a list, never
    raw JSON;
  - the calculation's words table breaks no word across lines at 390 px,
    and the page does not scroll sideways.
Expected values come from `battlelog export`, never from the page.
"""

from __future__ import annotations

import re

import browser_tests as bt

STRUCK = re.compile(r"~~([^~\s]+?)~~")

# Every word of the calculation's cells on one line (a word wrapped mid-way
# has client rects on two lines).
BROKEN_WORDS = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll('.calculation td, .calculation th')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (lines.size > 1) broken.push(word[0]);
      }
    }
  }
  return broken;
}"""


def struck_battle(env: bt.Env) -> tuple[str, list[dict]]:
    """A closed battle of five rolls, one of them 4d6kh3 (open-and-act.mjs)."""
    battle = bt.run(
        [env.node, str(env.tools / "open-and-act.mjs"), env.resolver, "--acts", "5", "--close"],
        {"BATTLELOG_TOKEN": bt.token(env, "forum", "dev")},
    ).strip()
    bt.export(env, battle)
    return battle, bt.event_lines(env.work / f"{battle}.jsonl")


def drawn_struck(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(f"{selector} s, {selector} del", "els => els.map(e => e.textContent.trim())")


def check_struck(env: bt.Env, browser, results: bt.Results) -> None:
    battle, lines = struck_battle(env)
    summaries = {
        line["version"]: {lang: line["event"][f"summary_{lang}"] for lang in ("en", "ru")}
        for line in lines
        if line["event_type"] == "ActionResolved"
    }
    struck = {v: s for v, s in summaries.items() if STRUCK.search(s["en"])}
    if not results.check(f"markup {battle}: the export has a summary with dice struck (~~)", bool(struck), f"{summaries}"):
        return
    context = browser.new_context(extra_http_headers={"Authorization": f"Bearer {bt.token(env, 'reader', 'dev')}"})
    link = f"{env.web}/battles/{battle}"
    for lang in ("en", "ru"):
        name = f"markup {battle}: battle page ?lang={lang}"
        try:
            page = context.new_page()
            page.goto(bt.with_query(link, lang=lang))
            verdict = bt.wait_verdict(page)
            results.check(f"{name}: data-audit verified", verdict == "verified", f"got {verdict!r}")
            text = page.evaluate("document.body.innerText")
            results.check(f"{name}: no ~~ shows", "~~" not in text, str(re.findall(r".{0,30}~~.{0,30}", text)[:3]))
            for version, summary in struck.items():
                want = STRUCK.findall(summary[lang])
                got = drawn_struck(page, f"#v{version} [data-summary]")
                results.check(f"{name}: v{version}'s struck dice {want} are <s> elements", got == want, f"got {got}")
            page.goto(bt.with_query(link, lang=lang, view="final"))
            text = page.evaluate("document.body.innerText")
            results.check(f"{name}, ?view=final: no ~~ shows", "~~" not in text, str(re.findall(r".{0,30}~~.{0,30}", text)[:3]))
            for version, summary in struck.items():
                want = STRUCK.findall(summary[lang])
                got = drawn_struck(page, f"li[data-action='{version}']")
                results.check(f"{name}, ?view=final: v{version}'s struck dice {want} are <s> elements", got == want, f"got {got}")
            page.close()
        except Exception:
            results.crashed(name)
    context.close()
    for lang in ("en", "ru"):
        name = f"markup {battle}: /verify?lang={lang}"
        try:
            page = browser.new_page()
            page.goto(f"{env.web}/verify?lang={lang}")
            text = page.evaluate("document.body.innerText")
            results.check(f"{name}: no backtick in the page's own text", "`" not in text, str(re.findall(r".{0,30}`.{0,30}", text)[:3]))
            verdict, _, _ = bt.choose_export(page, env.work / f"{battle}.jsonl")
            results.check(f"{name}: data-audit verified", verdict == "verified", f"got {verdict!r}")
            text = page.evaluate("document.body.innerText")
            results.check(f"{name}: no ~~ shows", "~~" not in text, str(re.findall(r".{0,30}~~.{0,30}", text)[:3]))
            for version, summary in struck.items():
                want = STRUCK.findall(summary[lang])
                got = drawn_struck(page, f"#v{version} [data-summary]")
                results.check(f"{name}: v{version}'s struck dice {want} are <s> elements", got == want, f"got {got}")
            page.close()
        except Exception:
            results.crashed(name)
    check_calculation(env, browser, results, battle, lines)


def check_calculation(env: bt.Env, browser, results: bt.Results, battle: str, lines: list[dict]) -> None:
    rolls = [line["version"] for line in lines if line["event_type"] == "DiceRolled"]
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        extra_http_headers={"Authorization": f"Bearer {bt.token(env, 'reader', 'dev')}"},
    )
    for lang in ("en", "ru"):
        for version in rolls[:2]:
            name = f"markup {battle}: the calculation of v{version} at 390 px, ?lang={lang}"
            try:
                page = context.new_page()
                page.goto(bt.with_query(f"{env.web}/battles/{battle}", lang=lang, calc=str(version), v=str(version)))
                cells = page.eval_on_selector_all(".calculation td", "els => els.length")
                results.check(f"{name}: the words table is drawn", cells > 0, f"{cells} cells")
                broken = page.evaluate(BROKEN_WORDS)
                results.check(f"{name}: no word broken across lines", not broken, f"broken: {broken[:5]}")
                wide = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
                results.check(f"{name}: the page does not scroll sideways", wide[0] <= wide[1], f"{wide}")
                page.close()
            except Exception:
                results.crashed(name)
    context.close()


def check_page_text(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    for battle, link in battles:
        lines = bt.event_lines(env.work / f"{battle}.jsonl")
        opened = next(line["event"] for line in lines if line["event_type"] == "BattleOpened")
        nested = [
            (p["id"], key)
            for p in opened.get("participants", [])
            for key, v in p.items()
            if isinstance(v, (dict, list))
        ]
        for lang in ("en", "ru"):
            name = f"markup {battle}: page text ?lang={lang}"
            try:
                page = browser.new_page()
                page.goto(bt.with_query(link, lang=lang))
                bt.wait_verdict(page)
                why = page.eval_on_selector_all("#checkpoint-why", "els => els.map(e => [e.innerText, e.querySelectorAll('code').length])")
                results.check(
                    f"{name}: the checkpoint's 'why' names its command as <code>, no backtick",
                    len(why) == 1 and "`" not in why[0][0] and why[0][1] >= 1,
                    f"{why}",
                )
                if nested:
                    sheets = page.eval_on_selector_all("details.sheets", "els => els.map(e => e.innerText).join('\\n')")
                    results.check(
                        f"{name}: the sheets' nested values {nested} are not raw JSON",
                        sheets != "" and "{" not in sheets and '":' not in sheets,
                        sheets[:200],
                    )
                page.close()
            except Exception:
                results.crashed(name)


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    if not battles:
        results.check("markup: a demo battle to check", False)
        return
    check_page_text(env, browser, results, battles)
    check_struck(env, browser, results)
