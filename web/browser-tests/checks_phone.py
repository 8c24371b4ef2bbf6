"""The battle first, on a phone (issue 39, finding 6), in Chromium against
`battlelog up`, on the demo's battles, ?lang=en and ?lang=ru, at 390 px:

  - the verdict's top is on the first screen;
  - the first action comes before the technical panels (the verification
    details with the keys and the checkpoint, the commitments, the state
    panel) in document order and on the page: a judge reaches it without
    scrolling past them;
  - the skip link lands on the timeline with its search form in view, and
    the next Tab is in the search form;
  - an action nobody disputed or ruled on is one tab stop (its "more"
    disclosure); opened, it holds the action's link, the calculation and
    the state after it, each reachable from the keyboard.
Expected versions come from `battlelog export`, never from the page.
"""

from __future__ import annotations

import browser_tests as bt

PHONE = {"width": 390, "height": 844}

# Elements a Tab stops at, that are drawn (content of a closed <details>
# has no boxes, so it is no stop).
TAB_STOPS = """(root) => [...root.querySelectorAll(
  'a[href], button, input, select, textarea, summary, [tabindex]'
)].filter((el) => el.tabIndex >= 0 && !el.disabled && el.getClientRects().length > 0)"""

LAYOUT = """() => {
  const first = document.querySelector('li.event[data-type="ActionResolved"]');
  const top = (el) => el.getBoundingClientRect().top + window.scrollY;
  const panels = ['verification', 'checkpoint', 'commitments', 'state']
    .map((id) => document.getElementById(id))
    .filter((el) => el);
  return {
    verdict: top(document.getElementById('verdict')),
    first: first ? top(first) : null,
    firstVersion: first ? Number(first.dataset.version) : null,
    before: panels
      .filter((p) => first && (p.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING))
      .map((p) => p.id),
    panels: panels.map((p) => [p.id, top(p)]),
  };
}"""


def check_layout(env: bt.Env, browser, results: bt.Results, battle: str, link: str, lang: str) -> None:
    name = f"phone {battle} ?lang={lang} at 390 px"
    lines = bt.event_lines(env.work / f"{battle}.jsonl")
    first_action = next((line["version"] for line in lines if line["event_type"] == "ActionResolved"), None)
    context = browser.new_context(viewport=PHONE)
    try:
        page = context.new_page()
        page.goto(bt.with_query(link, lang=lang))
        got = page.evaluate(LAYOUT)
        results.check(f"{name}: the verdict is on the first screen", got["verdict"] < PHONE["height"] - 60, f"{got['verdict']}")
        results.check(f"{name}: the first action on the page is the export's #v{first_action}", got["firstVersion"] == first_action, f"{got['firstVersion']}")
        results.check(f"{name}: no technical panel comes before the first action", got["before"] == [], f"{got['before']}")
        below = [pid for pid, y in got["panels"] if got["first"] is not None and y < got["first"]]
        results.check(f"{name}: and none is drawn above it", below == [], f"first action at {got['first']}, panels {got['panels']}")
        # The skip link: the timeline with its search form in view.
        page.keyboard.press("Tab")
        results.check(f"{name}: the first Tab is the skip link", page.evaluate("document.activeElement?.classList.contains('skip-link')"))
        page.keyboard.press("Enter")
        form = page.evaluate("(() => { const r = document.getElementById('search').getBoundingClientRect(); return [r.top, r.bottom]; })()")
        results.check(f"{name}: after the skip link the search form is in view", 0 <= form[0] < PHONE["height"], f"{form}")
        page.keyboard.press("Tab")
        results.check(f"{name}: and the next Tab is in the search form", page.evaluate("!!document.activeElement?.closest('#search')"))
        page.close()
    except Exception:
        results.crashed(name)
    finally:
        context.close()


def check_tab_stops(env: bt.Env, browser, results: bt.Results, battle: str, link: str, lang: str) -> None:
    name = f"tab stops {battle} ?lang={lang}"
    lines = bt.event_lines(env.work / f"{battle}.jsonl")
    referred = {line["event"].get("refers_to") for line in lines if line["event_type"] in ("DisputeRaised", "JudgeRuling")}
    plain = [line["version"] for line in lines if line["event_type"] == "ActionResolved" and line["version"] not in referred]
    if not results.check(f"{name}: the battle has actions nobody disputed", len(plain) > 0):
        return
    try:
        page = browser.new_page()
        page.goto(bt.with_query(link, lang=lang))
        counts, which = {}, {}
        for version in plain:
            # Real Tab presses from the action's own element (focused
            # programmatically, no stop itself) until the focus leaves it.
            page.evaluate(f"(() => {{ const li = document.getElementById('v{version}'); li.setAttribute('tabindex', '-1'); li.focus(); }})()")
            stops = []
            for _ in range(20):
                page.keyboard.press("Tab")
                inside = page.evaluate(f"(() => {{ const el = document.activeElement; return el && el.closest('#v{version}') && el.id !== 'v{version}' ? el.outerHTML.slice(0, 80) : null; }})()")
                if inside is None:
                    break
                stops.append(inside)
            page.evaluate(f"document.getElementById('v{version}').removeAttribute('tabindex')")
            counts[version] = len(stops)
            which[version] = stops
        many = {v: n for v, n in counts.items() if n != 1}
        first_bad = which[next(iter(many))] if many else []
        results.check(f"{name}: each of the {len(plain)} undisputed actions is one tab stop", not many, f"stops by action: {many}; {first_bad}")
        # Opened, the disclosure holds the action's link and the state after
        # it, reachable from the keyboard.
        version = plain[0]
        page.focus(f"#v{version} summary")
        page.keyboard.press("Enter")
        inside = page.evaluate(
            f"(() => ({TAB_STOPS})(document.getElementById('v{version}')).map((el) => el.getAttribute('href') || el.tagName))()"
        )
        results.check(f"{name}: opened, #v{version}'s disclosure holds its link", f"#v{version}" in inside, f"{inside}")
        results.check(f"{name}: and the state after it", any(h and f"at={version}" in h for h in inside), f"{inside}")
        page.close()
    except Exception:
        results.crashed(name)


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    if not battles:
        results.check("phone layout: a demo battle to check", False)
        return
    for lang in ("en", "ru"):
        check_layout(env, browser, results, *battles[0], lang)
        check_tab_stops(env, browser, results, *battles[0], lang)
