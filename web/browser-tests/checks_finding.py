"""Finding things on a battle page (issue 39, part 8), in Chromium against
`battlelog up`, on the demo's battles:

  - the participant search takes part of a name in any case (`?actor=`);
  - the free-text search (`?q=`) finds an action by part of its move, in
    any case, and an event by its version (`v12`);
  - on a battle of disputed actions (open-and-act.mjs --disputes):
    "disputed only" (`?disputed=1`) shows the disputes, the rulings and
    the events they contest, and nothing else;
  - the key `d` moves to the next dispute, Shift+d to the one before;
  - a link focused from the keyboard has a visible ring: a solid outline
    at least 2px wide (WCAG 2.2 focus appearance);
  - the skip link lands on the timeline section, before its search form.
Expected values come from `battlelog export`, never from the page.
"""

from __future__ import annotations

import urllib.parse

import browser_tests as bt


def shown_versions(page) -> list[int]:
    """The versions of the timeline's top-level entries."""
    return page.eval_on_selector_all("#timeline > li.event", "els => els.map(e => Number(e.dataset.version))")


def action_actor(line: dict) -> str:
    return str(((line["event"].get("action") or {}).get("actor")) or "")


def check_search(env: bt.Env, browser, results: bt.Results, battle: str, link: str) -> None:
    lines = bt.event_lines(env.work / f"{battle}.jsonl")
    actions = [line for line in lines if line["event_type"] == "ActionResolved" and action_actor(line)]
    if not results.check(f"search {battle}: the demo battle has actions with actors", len(actions) > 0):
        return
    actor = action_actor(actions[0])
    part = actor[1:4].upper() if len(actor) > 4 else actor.upper()
    want = sorted(line["version"] for line in actions if part.lower() in action_actor(line).lower())
    name = f"search {battle}: ?actor={part} (part of {actor!r}, upper case)"
    try:
        page = browser.new_page()
        page.goto(bt.with_query(link, actor=part))
        shown = shown_versions(page)
        missing = [v for v in want if v not in shown]
        results.check(f"{name}: each of the {len(want)} actions by a matching actor is listed", len(want) > 0 and not missing, f"missing {missing}, shown {shown}")
        page.close()
    except Exception:
        results.crashed(name)
    moves = [line for line in actions if isinstance((line["event"].get("action") or {}).get("move"), str) and len(line["event"]["action"]["move"]) > 3]
    cases = [(f"v{actions[-1]['version']}", [actions[-1]["version"]])]
    if moves:
        move = moves[0]["event"]["action"]["move"]
        fragment = move[1:].lower()
        cases.append((fragment, [line["version"] for line in moves if fragment in line["event"]["action"]["move"].lower()]))
    for query, want in cases:
        name = f"search {battle}: ?q={query}"
        try:
            page = browser.new_page()
            page.goto(bt.with_query(link, q=query))
            shown = shown_versions(page)
            missing = [v for v in want if v not in shown]
            results.check(f"{name}: lists {want}", not missing, f"shown {shown}")
            results.check(f"{name}: not every event", len(shown) < len(lines) // 2, f"shown {shown}")
            page.close()
        except Exception:
            results.crashed(name)


def disputed_battle(env: bt.Env) -> tuple[str, str, list[dict]]:
    """A closed battle of four actions, each disputed (open-and-act.mjs)."""
    battle = bt.run(
        [env.node, str(env.tools / "open-and-act.mjs"), env.resolver, "--acts", "4", "--disputes", "--close"],
        {"BATTLELOG_TOKEN": bt.token(env, "forum", "dev")},
    ).strip()
    bt.export(env, battle)
    link = f"{env.web}/battles/{battle}"
    return battle, link, bt.event_lines(env.work / f"{battle}.jsonl")


def check_disputes(env: bt.Env, browser, results: bt.Results) -> None:
    battle, link, lines = disputed_battle(env)
    reader = {"Authorization": f"Bearer {bt.token(env, 'reader', 'dev')}"}
    if not results.check(f"disputes {battle}: the battle has disputes", any(line["event_type"] == "DisputeRaised" for line in lines)):
        return
    browser = browser.new_context(extra_http_headers=reader)
    disputes = [line["version"] for line in lines if line["event_type"] == "DisputeRaised"]
    rulings = [line["version"] for line in lines if line["event_type"] == "JudgeRuling"]
    contested = {line["event"]["refers_to"] for line in lines if line["event_type"] == "DisputeRaised"}
    name = f"disputes {battle}: ?disputed=1"
    try:
        page = browser.new_page()
        page.goto(bt.with_query(link, disputed="1"))
        shown = set(shown_versions(page))
        allowed = set(disputes) | set(rulings) | contested
        results.check(f"{name}: every dispute listed", set(disputes) <= shown, f"shown {sorted(shown)}, disputes {disputes}")
        results.check(f"{name}: nothing undisputed listed", shown <= allowed, f"shown {sorted(shown)}, allowed {sorted(allowed)}")
        page.close()
    except Exception:
        results.crashed(name)
    name = f"disputes {battle}: the key d"
    try:
        page = browser.new_page()
        page.goto(link)
        bt.wait_verdict(page)
        page.click("h1")
        page.keyboard.press("d")
        first = page.evaluate("location.hash")
        page.keyboard.press("Shift+D")
        back = page.evaluate("location.hash")
        results.check(f"{name}: d goes to the first dispute #v{disputes[0]}", first == f"#v{disputes[0]}", first)
        results.check(f"{name}: Shift+d from the first goes round to the last #v{disputes[-1]}", back == f"#v{disputes[-1]}", back)
        page.close()
    except Exception:
        results.crashed(name)
    browser.close()  # the reader's context


def check_focus(env: bt.Env, browser, results: bt.Results, battle: str, link: str) -> None:
    name = f"focus {battle}"
    try:
        page = browser.new_page()
        page.goto(link)
        page.keyboard.press("Tab")
        skip = page.evaluate("document.activeElement?.getAttribute('href')")
        ring = page.evaluate(
            "(() => { const s = getComputedStyle(document.activeElement); return [s.outlineStyle, parseFloat(s.outlineWidth)]; })()"
        )
        results.check(f"{name}: the first Tab reaches the skip link to the timeline section", skip == "#timeline-section", f"{skip}")
        results.check(f"{name}: the focused link has a solid ring of 2px or more", ring[0] == "solid" and ring[1] >= 2, f"{ring}")
        page.keyboard.press("Enter")
        page.keyboard.press("Tab")
        inside = page.evaluate("!!document.activeElement?.closest('#search')")
        results.check(f"{name}: after the skip link, the next Tab is in the search form", inside, page.evaluate("document.activeElement?.outerHTML?.slice(0, 120)"))
        page.close()
    except Exception:
        results.crashed(name)


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    if not battles:
        results.check("finding things: a demo battle to check", False)
        return
    for battle, link in battles[:2]:
        check_search(env, browser, results, battle, link)
    check_disputes(env, browser, results)
    check_focus(env, browser, results, *battles[0])
