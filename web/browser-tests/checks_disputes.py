"""Disputes first and rulings followed through (issue 39, parts 1 and 2),
in Chromium against `battlelog up`, ?lang=en and ?lang=ru:

  - `#disputes` comes right after `#verdict`: one `li[data-dispute-version]`
    per dispute of the export, each with a link to what it contests, who
    raised it, `data-status="answered"` and a link to the ruling that names
    it (`answers_dispute`) or `data-status="open"` when none does; the
    dispute in the timeline links back to its ruling;
  - a ruling that names no dispute (as every ruling before the field
    existed) says it answers no recorded dispute; one that names a dispute
    links to it;
  - the resolver refuses a ruling whose `answers_dispute` is not a dispute
    of the battle (INVALID_ARGUMENT naming the field), and a forum token
    still cannot rule at all (PERMISSION_DENIED);
  - a ruling that changes an attack's damage marks the dodge answering that
    attack, resolved before the ruling, `data-affected-by="<ruling>"` with
    a visible note giving its damage as recorded and as the ruling leaves
    it (computed here from the export's own numbers); the final view shows
    the note too instead of "stands as recorded";
  - a ruling whose override changes nothing says so in plain, full-size
    text, not a grey aside;
  - in the final view an action whose dispute no ruling answers says so
    (with a link to the dispute), not just "stands as recorded";
  - live: on an open battle's page the panel follows the battle as it is
    played: a dispute raised after the page loaded appears as open, with
    the counts, and turns answered, linking its ruling, once a ruling that
    names it is journaled.

The battle is made here over gRPC (Python's grpcio on the repo's protos, as
checks_page.py does): Pokémon attacks that never miss, each answered by a
dodge, until one dodge takes less than all the damage (the dice decide, so
the battle goes on until one does); three disputes; three rulings. Every
expected value comes from the export and the requests made here.
"""

from __future__ import annotations

import time

import browser_tests as bt
import checks_page as cp

# Damage a ruling sets on the attack: the recorded damage is the move's
# power (90) times a third-step multiplier (30, 60, 90, 180), never this;
# a multiple of 20, so every reduction of the dodge table (0, 5, 50, 60 %)
# leaves a whole number and no rounding rule is assumed here.
RULED_DAMAGE = 40
MAX_PAIRS = 8


def attack(actor: str, target: str) -> dict:
    return {
        "type": "attack", "actor": actor, "target": target, "move": "Swift", "power": 90,
        "prefer": "crit", "high_crit": False, "interrupt": False, "multi_hit": False,
        "never_miss": True, "priority": False, "two_turn": False, "variable_power": False,
    }


def outcome_of(acted) -> dict:
    """An Act reply's outcome, whole numbers as integers (`outcome_json`)."""
    import json

    return json.loads(acted.outcome_json or "{}")


def made_battle(env: bt.Env, resolver: cp.Resolver, run_id: str) -> dict:
    """Opens a Pokémon battle and plays attack/dodge pairs until a dodge
    leaves part of the damage; disputes, rulings and the refused calls."""
    pb = resolver.pb
    forum = cp.issue(env, "forum", cp.FORUM_SUBJECT)
    judge = cp.issue(env, "judge", cp.JUDGE_SUBJECT)
    opened = resolver.call("OpenBattle", pb.OpenBattleRequest(
        ruleset="pokemon-d6@2", title="Disputes and rulings", forum_ref=f"forum:disputes/{run_id}",
        participants=[resolver.struct({"id": "pikachu"}), resolver.struct({"id": "meowth"})],
        client_seed=f"disputes/{run_id}", request_id=f"{run_id}-open"), forum)
    battle = opened.battle_id
    pairs = []
    damage = {}
    chosen = None
    for i in range(MAX_PAIRS):
        actor, target = ("pikachu", "meowth") if i % 2 == 0 else ("meowth", "pikachu")
        hit = resolver.call("Act", pb.ActRequest(
            battle_id=battle, action=resolver.struct(attack(actor, target)), request_id=f"{run_id}-attack-{i}"), forum)
        dodge = resolver.call("Act", pb.ActRequest(
            battle_id=battle, action=resolver.struct({"type": "dodge", "actor": target, "priority": False,
                                                       "teleport": False, "against": hit.version}),
            request_id=f"{run_id}-dodge-{i}"), forum)
        pairs.append((hit.version, dodge.version))
        damage[hit.version] = outcome_of(hit).get("damage")
        outcome = outcome_of(dodge)
        if outcome.get("result") == "rolled" and outcome.get("reduction_percent", 100) < 100:
            chosen = (hit.version, dodge.version)
            break
    other = next(p for p in pairs if p != chosen) if len(pairs) > 1 else None
    if other is None:
        # One more pair for the ruling that changes nothing.
        hit = resolver.call("Act", pb.ActRequest(
            battle_id=battle, action=resolver.struct(attack("meowth", "pikachu")), request_id=f"{run_id}-attack-x"), forum)
        other = (hit.version, None)
        damage[hit.version] = outcome_of(hit).get("damage")
    dispute = lambda refers_to, n: resolver.call("Dispute", pb.DisputeRequest(  # noqa: E731
        battle_id=battle, by="meowth", refers_to=refers_to, reason=f"not fair {n}", request_id=f"{run_id}-dispute-{n}"), forum).version
    answered = dispute(chosen[0], 1) if chosen else None
    unchanged = dispute(other[0], 2)
    left_open = dispute(other[0], 3)
    out = {"battle": battle, "chosen": chosen, "other": other, "answered": answered, "unchanged": unchanged, "open": left_open}
    # The refusals: a non-dispute named as the dispute answered, and a forum
    # token ruling.
    import grpc

    def refusal(request, token) -> tuple[str, str]:
        try:
            resolver.call("Rule", request, token)
            return ("OK", "")
        except grpc.RpcError as error:
            return (error.code().name, error.details() or "")

    out["not_a_dispute"] = refusal(pb.RuleRequest(
        battle_id=battle, refers_to=other[0], text="answers an attack", answers_dispute=other[0],
        request_id=f"{run_id}-rule-bad"), judge)
    out["forum_rules"] = refusal(pb.RuleRequest(
        battle_id=battle, refers_to=other[0], text="a forum may not rule", request_id=f"{run_id}-rule-forum"), forum)
    if chosen:
        out["ruling"] = resolver.call("Rule", pb.RuleRequest(
            battle_id=battle, refers_to=chosen[0], text=f"the rock cuts it to {RULED_DAMAGE}",
            override=resolver.struct({"damage": RULED_DAMAGE}), answers_dispute=answered,
            request_id=f"{run_id}-rule-1"), judge).version
    # The same damage as recorded: an override that changes nothing.
    out["no_change"] = resolver.call("Rule", pb.RuleRequest(
        battle_id=battle, refers_to=other[0], text="the damage stands as it was",
        override=resolver.struct({"damage": damage[other[0]]}), answers_dispute=unchanged,
        request_id=f"{run_id}-rule-2"), judge).version
    out["old_style"] = resolver.call("Rule", pb.RuleRequest(
        battle_id=battle, refers_to=other[0], text="it stands", request_id=f"{run_id}-rule-3"), judge).version
    return out


def check_refusals(results: bt.Results, made: dict) -> None:
    code, details = made["not_a_dispute"]
    results.check("Rule with answers_dispute naming an attack: INVALID_ARGUMENT naming answers_dispute",
                  code == "INVALID_ARGUMENT" and details.startswith("answers_dispute"), f"{code}: {details}")
    code, details = made["forum_rules"]
    results.check("Rule with a forum token: PERMISSION_DENIED", code == "PERMISSION_DENIED", f"{code}: {details}")


PANEL = """() => {
  const verdict = document.getElementById('verdict');
  const panel = document.getElementById('disputes');
  if (!panel) return null;
  return {
    afterVerdict: verdict.nextElementSibling === panel,
    lang: document.documentElement.lang,
    items: [...panel.querySelectorAll('li[data-dispute-version]')].map((li) => ({
      version: Number(li.dataset.disputeVersion),
      status: li.dataset.status,
      contests: li.querySelector('a.contests')?.getAttribute('href') ?? null,
      answer: li.querySelector('a.answer')?.getAttribute('href') ?? null,
      text: li.innerText,
    })),
    text: panel.innerText,
  };
}"""


def check_page(env: bt.Env, browser, results: bt.Results, made: dict, lang: str, reader: dict) -> None:
    battle = made["battle"]
    lines = bt.event_lines(env.work / f"{battle}.jsonl")
    by_version = {line["version"]: line for line in lines}
    disputes = [line for line in lines if line["event_type"] == "DisputeRaised"]
    rulings = [line for line in lines if line["event_type"] == "JudgeRuling"]
    answering = {r["event"].get("answers_dispute"): r["version"] for r in rulings if r["event"].get("answers_dispute") is not None}
    name = f"disputes panel of {battle} ?lang={lang}"
    context = browser.new_context(extra_http_headers=reader)
    try:
        page = context.new_page()
        page.goto(f"{env.web}/battles/{battle}?lang={lang}")
        got = page.evaluate(PANEL)
        if not results.check(f"{name}: #disputes is on the page", got is not None):
            return
        results.check(f"{name}: right after the verdict", got["afterVerdict"])
        results.check(f"{name}: one entry per dispute of the export",
                      [i["version"] for i in got["items"]] == [d["version"] for d in disputes], f"{got['items']}")
        for item in got["items"]:
            dispute = by_version[item["version"]]
            want_status = "answered" if item["version"] in answering else "open"
            results.check(f"{name}: dispute #v{item['version']} is {want_status}", item["status"] == want_status, item["status"])
            results.check(f"{name}: dispute #v{item['version']} links what it contests",
                          (item["contests"] or "").endswith(f"#v{dispute['event']['refers_to']}"), f"{item['contests']}")
            results.check(f"{name}: dispute #v{item['version']} names who raised it",
                          dispute["event"]["by"] in item["text"], item["text"])
            if want_status == "answered":
                results.check(f"{name}: dispute #v{item['version']} links its ruling #v{answering[item['version']]}",
                              (item["answer"] or "").endswith(f"#v{answering[item['version']]}"), f"{item['answer']}")
                back = page.locator(f"#v{item['version']} .dispute-answer a[href$='#v{answering[item['version']]}']").count()
                results.check(f"{name}: the dispute in the timeline links back to its ruling", back == 1)
            else:
                results.check(f"{name}: the open dispute #v{item['version']} links no ruling", item["answer"] is None)
        if lang == "ru":
            results.check(f"{name}: the panel is Russian", "Оспаривания" in got["text"] and "Open" not in got["text"], got["text"][:200])
        # Rulings: the one naming a dispute links it; the old-style one says
        # it answers no recorded dispute.
        old = made["old_style"]
        says = page.locator(f"#v{old} [data-answers-dispute='none']")
        results.check(f"{name}: ruling #v{old} names no dispute and says so",
                      says.count() == 1 and ("no recorded dispute" in says.inner_text() if lang == "en" else "не отвечает" in says.inner_text().lower()),
                      says.inner_text() if says.count() else "missing")
        if made.get("ruling"):
            link = page.locator(f"#v{made['ruling']} a.answers-link[href$='#v{made['answered']}']").count()
            results.check(f"{name}: ruling #v{made['ruling']} links the dispute #v{made['answered']} it answers", link == 1)
        # A ruling with no override, and one whose override changes
        # nothing: said plainly, not a grey aside.
        for ruling, words in ((old, ("changes no outcome", "не меняет итога")), (made["no_change"], ("changes nothing", "ничего не меняет"))):
            plain = page.locator(f"#v{ruling} [data-ruling-effect='none']")
            said = plain.first.inner_text() if plain.count() else ""
            if results.check(f"{name}: ruling #v{ruling} says it {words[0]}", plain.count() == 1 and words[0 if lang == 'en' else 1] in said, said):
                style = plain.first.evaluate("el => { const s = getComputedStyle(el); const b = getComputedStyle(document.body); return [s.color === b.color, parseFloat(s.fontSize) >= parseFloat(b.fontSize), el.closest('.muted') === null]; }")
                results.check(f"{name}: ruling #v{ruling}'s no-change is in the body's colour and size, no aside", all(style), f"{style}")
        page.close()
    except Exception:
        results.crashed(name)
    finally:
        context.close()


def expected_affected(lines: list[dict], made: dict) -> tuple[int, int, int] | None:
    """The dodge the ruling reaches and its damage after, as recorded and
    with the ruled damage: from the export's numbers and docs/rules.md §1.3
    (damage_after = round(incoming × (100 − reduction) / 100))."""
    if not made.get("chosen"):
        return None
    _, dodge = made["chosen"]
    outcome = next(line for line in lines if line["version"] == dodge)["event"]["outcome"]
    reduction = outcome["reduction_percent"]
    assert RULED_DAMAGE * (100 - reduction) % 100 == 0
    again = RULED_DAMAGE * (100 - reduction) // 100
    if again == outcome["damage_after"]:
        return None
    return dodge, outcome["damage_after"], again


def check_affected(env: bt.Env, browser, results: bt.Results, made: dict, lang: str, reader: dict) -> None:
    battle = made["battle"]
    lines = bt.event_lines(env.work / f"{battle}.jsonl")
    name = f"rulings followed through in {battle} ?lang={lang}"
    want = expected_affected(lines, made)
    if not results.check(f"{name}: the battle has a dodge the ruling reaches", want is not None, f"{made.get('chosen')}"):
        return
    dodge, recorded, again = want
    ruling = made["ruling"]
    context = browser.new_context(extra_http_headers=reader)
    try:
        page = context.new_page()
        page.goto(f"{env.web}/battles/{battle}?lang={lang}")
        marked = page.eval_on_selector_all("[data-affected-by]", "els => els.map(e => [Number(e.dataset.version), e.dataset.affectedBy])")
        results.check(f"{name}: exactly the dodge #v{dodge} is marked data-affected-by={ruling}", marked == [[dodge, str(ruling)]], f"{marked}")
        note = page.locator(f"#v{dodge} .affected-note")
        text = note.first.inner_text() if note.count() else ""
        results.check(f"{name}: the dodge's note is visible", note.count() == 1 and note.first.is_visible())
        results.check(f"{name}: the note gives damage after {recorded} as recorded and {again} with the ruling",
                      str(recorded) in text and str(again) in text and f"#v{ruling}" in text, text)
        if lang == "ru":
            results.check(f"{name}: the note is Russian", "решени" in text.lower() and "ruling" not in text.lower(), text)
        else:
            results.check(f"{name}: the note is English", "ruling" in text.lower(), text)
        page.goto(f"{env.web}/battles/{battle}?lang={lang}&view=final")
        final = page.locator(f"#final-view li[data-action='{dodge}']")
        final_text = final.first.inner_text() if final.count() else ""
        results.check(f"{name}: the final view notes the dodge is changed by #v{ruling}, not 'as recorded'",
                      f"#v{ruling}" in final_text and final.locator(".affected-note").count() == 1, final_text)
        contested = made["other"][0]
        marker = page.locator(f"#final-view li[data-action='{contested}'] .open-dispute a[href$='#v{made['open']}']").count()
        results.check(f"{name}: the final view says #v{contested} is disputed with no ruling yet (#v{made['open']})", marker == 1)
        page.close()
    except Exception:
        results.crashed(name)
    finally:
        context.close()


LIVE_PANEL = """() => {
  const panel = document.getElementById('disputes');
  const count = document.getElementById('disputes-count');
  return {
    items: [...panel.querySelectorAll('li[data-dispute-version]')].map((li) => ({
      version: Number(li.dataset.disputeVersion), status: li.dataset.status,
      contests: li.querySelector('a.contests')?.getAttribute('href') ?? null,
      answer: li.querySelector('a.answer')?.getAttribute('href') ?? null,
      text: li.innerText,
    })),
    noneShown: !(document.getElementById('no-disputes')?.hidden ?? true),
    counts: count && !count.hidden ? [count.querySelector('.open-count').textContent, count.querySelector('.answered-count').textContent] : null,
  };
}"""


def check_live(env: bt.Env, browser, results: bt.Results, resolver: cp.Resolver, run_id: str, lang: str, reader: dict) -> None:
    """The panel of an open battle's page follows disputes and rulings live."""
    pb = resolver.pb
    forum = cp.issue(env, "forum", cp.FORUM_SUBJECT)
    judge = cp.issue(env, "judge", cp.JUDGE_SUBJECT)
    name = f"live disputes panel ?lang={lang}"
    context = browser.new_context(extra_http_headers=reader)
    try:
        battle = resolver.call("OpenBattle", pb.OpenBattleRequest(
            ruleset="pokemon-d6@2", title="Live disputes", forum_ref=f"forum:live-disputes/{run_id}/{lang}",
            participants=[resolver.struct({"id": "pikachu"}), resolver.struct({"id": "meowth"})],
            client_seed=f"live-disputes/{run_id}/{lang}", request_id=f"{run_id}-{lang}-open"), forum).battle_id
        hit = resolver.call("Act", pb.ActRequest(
            battle_id=battle, action=resolver.struct(attack("pikachu", "meowth")), request_id=f"{run_id}-{lang}-attack"), forum)
        page = context.new_page()
        page.goto(f"{env.web}/battles/{battle}?lang={lang}")
        bt.wait_verdict(page)
        before = page.evaluate(LIVE_PANEL)
        results.check(f"{name}: no dispute yet, and the panel says so", before["items"] == [] and before["noneShown"] and before["counts"] is None, f"{before}")
        dispute = resolver.call("Dispute", pb.DisputeRequest(
            battle_id=battle, by="meowth", refers_to=hit.version, reason="too strong", request_id=f"{run_id}-{lang}-dispute"), forum).version
        page.wait_for_selector(f"#disputes li[data-dispute-version='{dispute}'][data-status='open']", timeout=bt.VERDICT_TIMEOUT_MS)
        raised = page.evaluate(LIVE_PANEL)
        item = raised["items"][0] if raised["items"] else {}
        results.check(f"{name}: the dispute #v{dispute} raised after the page loaded appears, open, linking what it contests",
                      len(raised["items"]) == 1 and (item.get("contests") or "").endswith(f"#v{hit.version}") and "meowth" in item.get("text", ""), f"{raised}")
        results.check(f"{name}: the counts read one open, none answered, and 'no dispute' is gone",
                      raised["counts"] == ["1", "0"] and not raised["noneShown"], f"{raised}")
        ruling = resolver.call("Rule", pb.RuleRequest(
            battle_id=battle, refers_to=hit.version, text="it stands", answers_dispute=dispute,
            request_id=f"{run_id}-{lang}-rule"), judge).version
        page.wait_for_selector(f"#disputes li[data-dispute-version='{dispute}'][data-status='answered']", timeout=bt.VERDICT_TIMEOUT_MS)
        answered = page.evaluate(LIVE_PANEL)
        item = answered["items"][0]
        results.check(f"{name}: the ruling #v{ruling} that names it turns it answered, linking the ruling",
                      (item.get("answer") or "").endswith(f"#v{ruling}") and answered["counts"] == ["0", "1"], f"{answered}")
        words = ("Answered", "Ruling") if lang == "en" else ("Отвечено", "Решение судьи")
        results.check(f"{name}: in the page's language", all(w in item["text"] for w in words), item["text"])
    except Exception:
        results.crashed(name)
    finally:
        context.close()


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    resolver = cp.Resolver(env)
    run_id = f"disputes-{int(time.time() * 1000)}"
    made = made_battle(env, resolver, run_id)
    bt.export(env, made["battle"])
    reader = {"Authorization": f"Bearer {bt.token(env, 'reader', 'dev')}"}
    check_refusals(results, made)
    for lang in ("en", "ru"):
        check_page(env, browser, results, made, lang, reader)
        check_affected(env, browser, results, made, lang, reader)
        check_live(env, browser, results, resolver, run_id, lang, reader)
