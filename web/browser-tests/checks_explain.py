"""Every result explained on the battle page (issue 21, finding 4): "pbta
shows 'full success (12)' under dice totalling 9 (the trait and the help are
in raw JSON only)".

On every demo battle, in English and Russian:
  - every action the rules resolved (not a free roll) carries its
    explanation (`section.explanation`) with at least one rule row;
  - a pbta move's sum adds up: the faces of its dice, read from the export,
    plus the modifiers the page names (trait, help, ...) give exactly the
    total the export records, and the trait is one of them;
  - a berserk strike's sums name the experience (and a die modifier the
    strike has);
  - "show the calculation" of a roll opens its ChaCha20 words, none giving
    another face than the one recorded;
  - the state panel after a version (`?at=N#state`) is shown and names
    every participant of the battle (berserk keeps no state per fighter).
Expected values come from `battlelog export`, never from the page.
"""

from __future__ import annotations

import re

import browser_tests as bt


def action_lines(env: bt.Env, battle: str) -> tuple[list[dict], dict[int, list[int]]]:
    lines = bt.event_lines(env.work / f"{battle}.jsonl")
    faces = {
        line["event"]["nonce"]: [d["value"] for d in line["event"].get("dice", [])]
        for line in lines
        if line["event_type"] == "DiceRolled"
    }
    return lines, faces


def signed_values(texts: list[str]) -> list[int]:
    found = []
    for text in texts:
        number = re.search(r"[+−-]?\s*\d+", text)
        if number:
            found.append(int(number.group().replace("−", "-").replace(" ", "")))
    return found


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    for battle, link in battles:
        lines, faces = action_lines(env, battle)
        opened = next(line["event"] for line in lines if line["event_type"] == "BattleOpened")
        ruleset = opened.get("ruleset", "")
        participants = [p.get("id") for p in opened.get("participants", [])]
        actions = [
            line for line in lines
            if line["event_type"] == "ActionResolved" and line["event"].get("action", {}).get("type") != "roll"
        ]
        for lang in ("en", "ru"):
            name = f"explained {ruleset} {battle} ?lang={lang}"
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(bt.with_query(link, lang=lang))
                missing = [
                    line["version"] for line in actions
                    if page.query_selector(f"#v{line['version']} section.explanation li.rule") is None
                ]
                results.check(
                    f"{name}: each of {len(actions)} actions has its explanation and rule row",
                    len(actions) > 0 and not missing,
                    f"versions without: {missing}",
                )
                if ruleset.startswith("pbta-2d6"):
                    for line in actions:
                        action, outcome = line["event"]["action"], line["event"].get("outcome") or {}
                        if action.get("type") != "move" or "total" not in outcome:
                            continue
                        dice = [face for nonce in line["event"].get("rolls", []) for face in faces.get(nonce, [])]
                        sum_el = page.query_selector(f"#v{line['version']} section.explanation li.sum")
                        keys = sum_el.eval_on_selector_all(".term", "els => els.map(e => e.dataset.key)") if sum_el else []
                        values = signed_values(
                            sum_el.eval_on_selector_all(".term-value", "els => els.map(e => e.textContent)") if sum_el else []
                        )
                        results.check(
                            f"{name}: move #v{line['version']}: dice {dice} + modifiers {dict(zip(keys, values))} "
                            f"= the recorded total {outcome['total']}",
                            sum_el is not None and "trait" in keys and sum(dice) + sum(values) == outcome["total"],
                            f"keys {keys}, values {values}",
                        )
                if ruleset.startswith("berserk"):
                    keys = page.eval_on_selector_all(
                        "section.explanation .term", "els => [...new Set(els.map(e => e.dataset.key))]"
                    )
                    # A die modifier of 0 changes nothing and need not be named.
                    strikes = [line["event"]["action"] for line in actions if line["event"]["action"].get("type") == "strike"]
                    modified = any(
                        (strike.get(side) or {}).get("die_modifier", 0) != 0
                        for strike in strikes for side in ("attacker", "defender")
                    )
                    results.check(
                        f"{name}: the strikes name the experience"
                        + (" and the die modifier" if modified else " (no die modifier in this battle)"),
                        "experience" in keys and ("die_modifier" in keys or not modified),
                        f"terms shown: {keys}",
                    )
                # "Show the calculation" of the first revealed roll: its
                # ChaCha20 words drawn, none marked as giving another face.
                roll = next((line for line in lines if line["event_type"] == "DiceRolled"), None)
                if roll is not None:
                    link_el = page.query_selector(f"#v{roll['version']} .calc-link a")
                    href = link_el.get_attribute("href") if link_el else None
                    if href:
                        page.goto(bt.with_query(link, lang=lang).split("?")[0] + href)
                    calc = page.query_selector(f"#v{roll['version']} .calculation")
                    faces_shown = page.eval_on_selector_all(f"#v{roll['version']} .calculation .mismatch", "els => els.length")
                    results.check(
                        f"{name}: the calculation of the roll #v{roll['version']} opens from its link, no face mismatched",
                        href is not None and calc is not None and faces_shown == 0
                        and str(roll["event"]["nonce"]) in calc.inner_text(),
                        f"link {href}, shown {calc is not None}, mismatches {faces_shown}",
                    )
                at = actions[0]["version"] if actions else 0
                page.goto(bt.with_query(link, lang=lang, at=str(at)) + "#state")
                panel = page.query_selector("#state")
                text = panel.inner_text() if panel else ""
                # berserk keeps no state per fighter (docs/rules.md: a strike
                # carries both sides' numbers), only its open exchanges.
                expected = [] if ruleset.startswith("berserk") else participants
                absent = [p for p in expected if p not in text]
                results.check(
                    f"{name}: the state after #v{at} is shown"
                    + (", naming every participant" if expected else ""),
                    panel is not None and len(text.splitlines()) > 1 and not absent,
                    f"missing {absent} in {text[:300]!r}",
                )
                page.close()
            except Exception:
                results.crashed(name)
