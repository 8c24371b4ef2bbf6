"""Browser checks of how a roll's dice are drawn (issue 21, finding 1; the
roll part of DOM contract v2).

A "gallery" battle rolls every kind of dice expression over real gRPC
(gallery.mjs: open, one free roll per expression, close so that the seeds
are revealed). On its page, for every roll of the export (`battlelog
export`, where every expected value comes from):
  - every die is drawn, in the recorded order, with `data-face` (the
    recorded value) and `data-sides`; a fudge die has `data-fudge="1"` and
    shows −, nothing or +; a d6 shows as many pips as its value; any other
    die shows its number;
  - `data-total` is the recorded total ("" when the arithmetic failed) and
    the one `.total` shows it;
  - each die's accessible name names its marks: dropped, rerolled, the die
    that exploded (the one before a die the record marks `exploded`), each
    success of a success count;
  - the verifier ends `verified` and ticks every roll `ok`;
  - at 390 px no roll is wider than the viewport.
Screenshots: target/browser/gallery.png (desktop), gallery-390.png and
gallery-dark.png (dark mode).
"""

from __future__ import annotations

import json
from pathlib import Path

import browser_tests as bt

# Fudge expressions are fudge dice only, so that which dice are fudge is
# known here from the expression alone.
FUDGE = ["10dF", "20dF", "4dF+1"]
EXPRESSIONS = FUDGE + [
    "3d6",
    "d%",
    "2d100",
    "1d1000",
    "1d1000000",
    "1d2+1d3+1d4+1d8+1d10+1d12+1d20",
    "1d6+2d8-3",
    "(1d6+2)*2",
    "-1d6",
    "4d6kh3",
    "4d6dl1",
    "2d20kl1",
    "4d6r1",
    "10d6r<=3",
    "3d6!",
    "10d6!",
    "10d4!>=3",
    "5d10>=7",
    "8d6kh5>=4",
    "1/(1d1-1)",
    "3d6+1/(1d1-1)",
]

MINUS = "\u2212"

# Per roll element: its total, and each die as drawn.
READ_ROLLS = """
els => els.map(el => ({
  nonce: el.getAttribute('data-nonce'),
  check: el.getAttribute('data-check'),
  total: el.getAttribute('data-total'),
  totals: [...el.querySelectorAll('.total')].map(t => t.textContent.trim()),
  dice: [...el.querySelectorAll('[data-face]')].map(d => ({
    face: d.getAttribute('data-face'),
    sides: d.getAttribute('data-sides'),
    fudge: d.getAttribute('data-fudge'),
    pips: d.querySelectorAll('.pip').length,
    value: d.querySelector('.value') ? d.querySelector('.value').textContent.trim() : null,
    label: d.getAttribute('aria-label') || '',
    role: d.getAttribute('role'),
  })),
}))
"""


def visible(die: dict) -> str:
    """A die's visible face by the contract: pip count, else `.value` text."""
    return str(die["pips"]) if die["pips"] > 0 else (die["value"] if die["value"] is not None else "<none>")


def expected_face(value: int, fudge: bool) -> str:
    if fudge:
        return {-1: MINUS, 0: "", 1: "+"}.get(value, f"<fudge {value}>")
    return str(value)


def marks(dice: list[dict], expression: str) -> list[set[str]]:
    """The marks each recorded die must be named with, from the record's
    flags (and, for a success count, the expression's threshold)."""
    out = []
    for i, die in enumerate(dice):
        m = set()
        if not die["kept"] and not die["rerolled"]:
            m.add("dropped")
        if die["rerolled"]:
            m.add("rerolled")
        # The record marks the die an explosion drew; the die that exploded
        # is the one before it (single-term expressions here).
        if i + 1 < len(dice) and dice[i + 1]["exploded"]:
            m.add("exploded")
        out.append(m)
    if expression in ("5d10>=7", "8d6kh5>=4"):
        threshold = 7 if expression.startswith("5d10") else 4
        for die, m in zip(dice, out):
            if die["kept"] and die["value"] >= threshold:
                m.add("success")
    return out


def named(label: str, mark: str) -> bool:
    return f", {mark}" in label.replace("not a success", "")


def run(env: bt.Env, browser, results: bt.Results, battles) -> None:
    name = "dice gallery"
    # Stale pictures of an earlier run must not pass for this run's.
    for shot in ("gallery.png", "gallery-390.png", "gallery-dark.png"):
        (env.shots / shot).unlink(missing_ok=True)
    battle = bt.run(
        [env.node, str(Path(__file__).resolve().parent / "gallery.mjs"), env.resolver, *EXPRESSIONS],
        {"BATTLELOG_TOKEN": bt.token(env, "forum", "dev")},
    ).strip()
    name = f"dice gallery {battle}"
    path = bt.export(env, battle)
    rolls = [line["event"] for line in bt.event_lines(path) if line["event_type"] == "DiceRolled"]
    results.check(
        f"{name}: the export has a roll for each of the {len(EXPRESSIONS)} expressions",
        sorted(r["expression"] for r in rolls) == sorted(EXPRESSIONS),
        f"rolled {[r['expression'] for r in rolls]}",
    )
    fudge_values = {d["value"] for r in rolls if r["expression"] in FUDGE for d in r["dice"]}
    results.check(
        f"{name}: the fudge rolls recorded -1, 0 and +1 (so each glyph is checked)",
        fudge_values == {-1, 0, 1},
        f"recorded {sorted(fudge_values)}",
    )
    flags = {
        flag: sum(1 for r in rolls for d in r["dice"] if test(d))
        for flag, test in [
            ("dropped", lambda d: not d["kept"] and not d["rerolled"]),
            ("rerolled", lambda d: d["rerolled"]),
            ("exploded", lambda d: d["exploded"]),
        ]
    }
    results.check(
        f"{name}: the gallery has dropped, rerolled and explosion dice to check",
        all(n > 0 for n in flags.values()),
        f"{flags}",
    )
    errors = [r for r in rolls if r.get("error")]
    results.check(
        f"{name}: the division by zero is journaled with its dice and its error",
        len(errors) == 2 and all(r["dice"] for r in errors),
        json.dumps(errors),
    )

    context = browser.new_context(
        extra_http_headers={"Authorization": f"Bearer {bt.token(env, 'reader', 'dev')}"},
        viewport={"width": 1280, "height": 900},
    )
    page = context.new_page()
    page.goto(f"{env.web}/battles/{battle}")
    verdict = bt.wait_verdict(page)
    drawn = page.eval_on_selector_all("[data-nonce]", READ_ROLLS)
    by_nonce: dict[str, list[dict]] = {}
    for element in drawn:
        by_nonce.setdefault(element["nonce"], []).append(element)

    for roll in rolls:
        nonce = str(roll["nonce"])
        label = f"{name}: roll {nonce} {roll['expression']!r}"
        elements = by_nonce.get(nonce, [])
        if not results.check(f"{label}: drawn on the page", len(elements) > 0):
            continue
        fudge = roll["expression"] in FUDGE
        want_total = "" if roll.get("error") else str(roll["total"])
        want_marks = marks(roll["dice"], roll["expression"])
        for element in elements:
            dice = element["dice"]
            results.check(
                f"{label}: all {len(roll['dice'])} dice drawn with data-face in recorded order",
                [d["face"] for d in dice] == [str(d["value"]) for d in roll["dice"]],
                f"drawn {[d['face'] for d in dice]}, recorded {[d['value'] for d in roll['dice']]}",
            )
            results.check(
                f"{label}: data-sides as recorded, data-fudge on fudge dice only",
                [d["sides"] for d in dice] == [str(d["sides"]) for d in roll["dice"]]
                and all((d["fudge"] == "1") == fudge for d in dice),
                f"drawn {[(d['sides'], d['fudge']) for d in dice]}",
            )
            faces = [visible(d) for d in dice]
            want_faces = [expected_face(d["value"], fudge) for d in roll["dice"]]
            results.check(
                f"{label}: each die's visible face is its recorded value"
                + (" (−, blank, +)" if fudge else ""),
                faces == want_faces,
                f"visible {faces}, expected {want_faces}",
            )
            results.check(
                f"{label}: data-total {want_total!r} and one .total showing it",
                element["total"] == want_total and element["totals"] == [want_total],
                f"data-total {element['total']!r}, .total {element['totals']}",
            )
            unnamed = [
                (i, d["label"], sorted(m))
                for i, (d, m) in enumerate(zip(dice, want_marks))
                if d["role"] != "img" or not d["label"] or not all(named(d["label"], x) for x in m)
                or any(named(d["label"], x) for x in {"dropped", "rerolled", "exploded", "success"} - m)
            ]
            results.check(
                f"{label}: every die an image named with exactly its marks",
                len(dice) == len(roll["dice"]) and not unnamed,
                f"{len(dice)} drawn of {len(roll['dice'])}; {unnamed}",
            )
            results.check(f"{label}: ticked ok", element["check"] == "ok", f"data-check {element['check']!r}")
    results.check(f"{name}: data-audit verified", verdict == "verified", f"got {verdict!r}")
    env.shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(env.shots / "gallery.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    too_wide = page.eval_on_selector_all(
        ".roll",
        "els => els.filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)"
        ".map(e => [e.dataset.nonce, Math.round(e.getBoundingClientRect().right)])",
    )
    results.check(f"{name}: at 390 px every roll fits the viewport", not too_wide, f"{too_wide}")
    page.screenshot(path=str(env.shots / "gallery-390.png"), full_page=True)
    # For a human look at the marks in dark mode (no assertion on pixels).
    page.set_viewport_size({"width": 1280, "height": 900})
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=str(env.shots / "gallery-dark.png"), full_page=True)
    context.close()
    results.check("screenshot gallery.png saved", (env.shots / "gallery.png").is_file())
