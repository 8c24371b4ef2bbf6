"""The battle page as a judge needs it (issue 21, the page's part), in
Chromium against `battlelog up`:

  - a forum's `Close` shows the forum's recorded credential (subject and
    role) as who closed it, and the closer's free text `by` only as a note;
  - every command event shows its recorded time as `<time datetime>`, equal
    to the export's `recorded_at_unix_micros`;
  - a ruling's override shows on the event it overrides: the recorded value
    struck through (`del`), the final one, a link to the ruling; the ruling
    made after the close is marked so;
  - no horizontal scroll at 390 px and 320 px on a demo battle page, the
    ruled battle's page and /verify;
  - `?lang=de` answers 200 HTML with a notice, on the battle page and
    /verify;
  - a Russian page's text (outside the forum's own text, code and the
    rolls, which the dice part draws) has no English word of the English
    label and field tables (crates/web/src/i18n.rs);
  - widened (issue 39, finding 4): once the verifier has spoken, a Russian
    page's checks, reasons, explanations, rule values and roll purposes
    hold no English word at all — every demo battle page, the ruled
    battle's page, and /verify failing a die-changed export and a cut one
    (its problem list and verdict); nothing is skipped but the forum's own
    text, code and hidden text (the server's findings and the verifier's
    reasons are no longer set apart as English);
  - `?v=N` of a late version of a battle longer than a page lands on the
    page holding it, and that page is a window (an early event is not on it).

The battles are made here over gRPC (Python's grpcio, the protos compiled
into the work dir): a Pokémon battle with an attack, a dispute, a close by
a forum token whose `by` names someone else, and a judge's ruling after the
close; and a battle of more events than a page shows. Expected values come
from the CLI's export and the tokens issued here, never from the page.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import browser_tests as bt

FORUM_SUBJECT = "forum-pokeboard"
JUDGE_SUBJECT = "judge-anna"
CLOSE_BY = "judge-anna (judge)"
# Never what the attack records: pokemon-d6@2 damage is the move's power
# (90) times a multiplier of thirds (0, 30, 60, 90, 180 …), so the ruling
# always changes it and the page must show it changed.
OVERRIDE_DAMAGE = 45
# More entries than a page shows by default (the web's `page_events`, 200).
LONG_BATTLE_PASSES = 230
REPO = Path(__file__).resolve().parents[2]
I18N = REPO / "crates" / "web" / "src" / "i18n.rs"


def grpc_modules(env: bt.Env):
    """The resolver's Python stubs, compiled from the repo's protos."""
    out = env.work / "pb"
    if not (out / "battlelog" / "v1" / "resolver_pb2_grpc.py").is_file():
        out.mkdir(parents=True, exist_ok=True)
        import grpc_tools

        include = Path(grpc_tools.__file__).parent / "_proto"
        protos = sorted(str(p.relative_to(REPO / "proto")) for p in (REPO / "proto").rglob("*.proto"))
        subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{REPO / 'proto'}", f"-I{include}",
             f"--python_out={out}", f"--grpc_python_out={out}", *protos],
            check=True,
        )
    sys.path.insert(0, str(out))
    import grpc
    from battlelog.v1 import resolver_pb2, resolver_pb2_grpc

    return grpc, resolver_pb2, resolver_pb2_grpc


def issue(env: bt.Env, role: str, subject: str) -> str:
    return bt.run(
        [env.battlelog, "token", "issue", "--role", role, "--tenant", "dev", "--subject", subject,
         "--ttl", "30m", "--data-dir", env.data_dir]
    ).strip()


class Resolver:
    def __init__(self, env: bt.Env) -> None:
        grpc, self.pb, stubs = grpc_modules(env)
        target = env.resolver.split("://", 1)[-1].rstrip("/")
        self.stub = stubs.ResolverStub(grpc.insecure_channel(target))

    def struct(self, value: dict):
        from google.protobuf import struct_pb2

        s = struct_pb2.Struct()
        s.update(value)
        return s

    def call(self, method: str, request, token: str):
        """One RPC, waiting out the tenant's rate limit as a forum would: a
        RESOURCE_EXHAUSTED says how long ("retry in N ms"), and the request
        id makes the retry idempotent (the long battle acts faster than the
        dev tenant's 100 a second on a fast machine)."""
        import time

        import grpc

        for _ in range(100):
            try:
                return getattr(self.stub, method)(request, metadata=[("authorization", f"Bearer {token}")], timeout=60)
            except grpc.RpcError as error:
                wait = re.search(r"retry in (\d+) ms", error.details() or "")
                if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or wait is None:
                    raise
                time.sleep((int(wait.group(1)) + 1) / 1000)
        raise RuntimeError(f"{method}: still over the rate limit after 100 waits")


def attack() -> dict:
    return {
        "type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90,
        "effect": "paralysis", "prefer": "crit", "high_crit": False, "interrupt": False, "multi_hit": False,
        "never_miss": False, "priority": False, "two_turn": False, "variable_power": False,
    }


def ruled_battle(env: bt.Env, resolver: Resolver, run_id: str) -> tuple[str, int, int, int]:
    """Opens, attacks, disputes, closes (forum token) and rules after the
    close (judge token): (battle id, attack version, close version, ruling version)."""
    pb = resolver.pb
    forum = issue(env, "forum", FORUM_SUBJECT)
    judge = issue(env, "judge", JUDGE_SUBJECT)
    opened = resolver.call("OpenBattle", pb.OpenBattleRequest(
        ruleset="pokemon-d6@2", title="A ruled battle", forum_ref="https://forum.example/t/42?p=7",
        participants=[resolver.struct({"id": "pikachu"}), resolver.struct({"id": "meowth"})],
        client_seed=f"page-checks/{run_id}", request_id=f"{run_id}-open"), forum)
    battle = opened.battle_id
    acted = resolver.call("Act", pb.ActRequest(
        battle_id=battle, action=resolver.struct(attack()), request_id=f"{run_id}-attack"), forum)
    resolver.call("Dispute", pb.DisputeRequest(
        battle_id=battle, by="meowth", refers_to=acted.version, reason="I was behind a rock",
        request_id=f"{run_id}-dispute"), forum)
    closed = resolver.call("Close", pb.CloseRequest(
        battle_id=battle, by=CLOSE_BY, reason="the fight is over", request_id=f"{run_id}-close"), forum)
    ruled = resolver.call("Rule", pb.RuleRequest(
        battle_id=battle, refers_to=acted.version, text=f"the rock halves it: {OVERRIDE_DAMAGE}",
        override=resolver.struct({"damage": OVERRIDE_DAMAGE}), request_id=f"{run_id}-rule"), judge)
    return battle, acted.version, closed.version, ruled.version


def long_battle(env: bt.Env, resolver: Resolver, run_id: str) -> str:
    pb = resolver.pb
    forum = issue(env, "forum", FORUM_SUBJECT)
    opened = resolver.call("OpenBattle", pb.OpenBattleRequest(
        ruleset="pokemon-d6@2", title="A long battle", forum_ref=f"forum:page-checks/{run_id}",
        participants=[resolver.struct({"id": "pikachu"}), resolver.struct({"id": "meowth"})],
        client_seed=f"page-checks-long/{run_id}", request_id=f"{run_id}-long-open"), forum)
    for i in range(LONG_BATTLE_PASSES):
        resolver.call("Act", pb.ActRequest(
            battle_id=opened.battle_id, action=resolver.struct({"type": "pass", "actor": "meowth"}),
            request_id=f"{run_id}-pass-{i}"), forum)
    return opened.battle_id


def iso_micros(micros: int) -> str:
    """RFC 3339 UTC to the microsecond, from whole numbers only."""
    import datetime

    seconds, fraction = divmod(micros, 1_000_000)
    at = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return at.strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction:06d}Z"


def english_words() -> set[str]:
    """English words of the page's label and field tables whose Russian
    side differs (a word both tables use in Russian too, like JSON, is no
    leak)."""
    source = I18N.read_text(encoding="utf-8")
    triples = re.findall(r'\(\s*"([^"]*)",\s*"((?:[^"\\]|\\.)*)",\s*"((?:[^"\\]|\\.)*)",?\s*\)', source)
    russian = " ".join(ru for _, _, ru in triples).lower()
    words = set()
    for _, en, ru in triples:
        if en == ru:
            continue
        for word in re.findall(r"[A-Za-z]{4,}", en):
            if word.lower() not in russian:
                words.add(word.lower())
    return words


# The text a Russian page may show in English: the forum's own text, code,
# what is marked as another language, and the rolls (drawn by the dice part).
RUSSIAN_TEXT = """() => {
  const skip = '.forum-text, code, pre, script, style, [translate="no"], [lang]:not([lang="ru"]), .roll, nav';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const out = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || el.closest(skip) || el.getClientRects().length === 0) continue;
    out.push(node.textContent);
  }
  return out.join(' ');
}"""


# Widened: only the forum's own text, code (hashes, keys, JSON, commands),
# the recorded summaries (the rules' Russian, naming the forum's fighters and
# moves as written) and hidden text are left out; a reason marked lang="en"
# is no excuse.
RUSSIAN_UI_TEXT = """() => {
  const skip = '.forum-text, [data-summary], code, pre, kbd, script, style, [translate="no"], svg';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const out = [];
  const where = (el) => {
    const path = [];
    for (let e = el; e && e !== document.body && path.length < 4; e = e.parentElement) {
      path.unshift(e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.classList.length ? '.' + [...e.classList].join('.') : ''));
    }
    return path.join('>');
  };
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || el.closest(skip) || el.getClientRects().length === 0) continue;
    if (/[A-Za-z]{3,}/.test(node.textContent)) out.push([node.textContent, where(el)]);
  }
  return out;
}"""

# Latin words a Russian page may show: the export's file format's name, the
# time zone of every time, and the other language's own name on its link.
LATIN_ALLOWED = {"json", "lines", "utc", "english"}


def latin_words(page) -> list[str]:
    """The English words of a Russian page's own text (three letters or
    more, so a die's d6 or the table's X-Y-Z is not one), each with where
    it is (the element's path)."""
    found = []
    for text, where in page.evaluate(RUSSIAN_UI_TEXT):
        words = [w for w in re.findall(r"[A-Za-z]{3,}", text) if w.lower() not in LATIN_ALLOWED]
        if words:
            found.append(f"{' '.join(words)} in {where}")
    return found


def check_russian_throughout(env: bt.Env, browser, results: bt.Results, pages: list[tuple[str, str, dict]]) -> None:
    """Each (name, url, headers) page in Russian, after the verifier: no English word."""
    for name, url, headers in pages:
        context = browser.new_context(extra_http_headers=headers)
        page = context.new_page()
        page.goto(bt.with_query(url, lang="ru"))
        bt.wait_verdict(page)
        found = latin_words(page)
        results.check(f"{name} ?lang=ru: no English word in its checks, reasons and explanations", not found, f"found {found}")
        context.close()


def check_verify_in_russian(env: bt.Env, browser, results: bt.Results, source: Path) -> None:
    """/verify?lang=ru failing a die-changed export and one cut before its
    end: its verdict, checks and reasons in Russian."""
    die, _ = bt.tamper(env, "die", source, "last-roll")
    lines = source.read_text().splitlines(keepends=True)
    cut = source.with_suffix(".cut.jsonl")
    cut.write_text("".join(lines[: max(2, len(lines) // 2)]))
    for label, path in (("a die changed", die), ("cut short", cut)):
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{env.web}/verify?lang=ru")
        bt.choose_export(page, path)
        found = latin_words(page)
        results.check(f"/verify?lang=ru, {label}: no English word in its verdict, checks and reasons", not found, f"found {found}")
        page.close()


def no_sideways_scroll(browser, results: bt.Results, name: str, url: str, headers: dict | None = None) -> None:
    for width in (390, 320):
        context = browser.new_context(viewport={"width": width, "height": 800}, extra_http_headers=headers or {})
        page = context.new_page()
        page.goto(url)
        page.wait_for_load_state("load")
        wide = page.evaluate("() => [document.scrollingElement.scrollWidth, window.innerWidth]")
        results.check(f"{name} at {width} px: no horizontal scroll", wide[0] <= wide[1], f"scrollWidth {wide[0]} > {wide[1]}")
        context.close()


def text_of(locator) -> str:
    """The text of the first element matched; empty when none is (a
    missing element is a failed check, not a 30-second wait)."""
    return locator.first.inner_text() if locator.count() else ""


def attribute_of(locator, name: str) -> str | None:
    return locator.first.get_attribute(name) if locator.count() else None


def number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def check_ruled_battle(env: bt.Env, browser, results: bt.Results, resolver: Resolver, run_id: str, reader: dict) -> str:
    """Who closed it, when each command was recorded, the ruling applied,
    and no English on its Russian page; returns the page's URL."""
    battle, attacked, closed, ruling = ruled_battle(env, resolver, run_id)
    exported = bt.event_lines(bt.export(env, battle))
    by_version = {line["version"]: line for line in exported}
    url = f"{env.web}/battles/{battle}"
    context = browser.new_context(extra_http_headers=reader)
    page = context.new_page()
    page.goto(url + "?lang=en")
    close = page.locator(f"#v{closed}")
    who = close.locator(":scope > .who-when .credential")
    results.check(
        "a forum's Close shows the forum's credential as who closed it",
        who.count() == 1 and attribute_of(who, "data-subject") == FORUM_SUBJECT
        and attribute_of(who, "data-role") == "forum" and FORUM_SUBJECT in text_of(who) and "forum" in text_of(who),
        f"got {who.count()} credential elements: {text_of(close)[:400]!r}",
    )
    results.check(
        "the Close's free-text `by` is not shown as its identity",
        who.count() == 1 and CLOSE_BY not in text_of(who) and CLOSE_BY in text_of(close),
        text_of(close)[:400],
    )
    commands = [line for line in exported if line["event_type"] not in ("DiceRolled", "SeedCommitted")]
    wrong = []
    for line in commands:
        shown = page.locator(f"#v{line['version']} > .who-when time")
        want = iso_micros(line["recorded_at_unix_micros"])
        got = attribute_of(shown, "datetime") if shown.count() == 1 else None
        if got != want or not text_of(shown).strip():
            wrong.append((line["version"], want, got))
    results.check(
        f"each of {len(commands)} command events shows its recorded time", bool(commands) and not wrong, f"{wrong}"
    )

    recorded = by_version[attacked]["event"]["outcome"]["damage"]
    field = page.locator(f"#v{attacked} .final-outcome [data-field='damage']")
    struck, final = text_of(field.locator("del")).strip(), text_of(field.locator("ins")).strip()
    results.check(
        f"the ruling's override shows on #v{attacked}: {recorded} struck, {OVERRIDE_DAMAGE} final",
        field.count() == 1 and number(struck) == float(recorded) and number(final) == OVERRIDE_DAMAGE,
        f"struck {struck!r}, final {final!r}",
    )
    results.check(
        f"the overridden event links its ruling #v{ruling}", field.locator(f"a[href$='#v{ruling}']").count() == 1
    )
    results.check(
        f"the ruling #v{ruling}, made after the close #v{closed}, is marked so",
        page.locator(f"#v{ruling} .after-close").count() == 1,
    )
    forum_link = page.locator("dl.facts a[href='https://forum.example/t/42?p=7']")
    results.check(
        "the forum reference is a nofollow link",
        forum_link.count() == 1 and "nofollow" in (attribute_of(forum_link, "rel") or ""),
    )
    context.close()

    context = browser.new_context(extra_http_headers=reader)
    page = context.new_page()
    page.goto(url + "?lang=ru")
    text = page.evaluate(RUSSIAN_TEXT).lower()
    leaked = sorted(w for w in english_words() if re.search(rf"\b{w}\b", text))
    results.check("the Russian page's text has no English word of the label tables", not leaked, f"found {leaked}")
    context.close()
    check_russian_throughout(env, browser, results, [("the ruled battle's page", url, reader)])
    return url


def check_long_battle(env: bt.Env, browser, results: bt.Results, resolver: Resolver, run_id: str, reader: dict) -> None:
    """?v=N of a late version lands on the page holding it, a window."""
    long_id = long_battle(env, resolver, run_id)
    versions = [line["version"] for line in bt.event_lines(bt.export(env, long_id))]
    late, early = versions[-1], versions[1]
    context = browser.new_context(extra_http_headers=reader)
    page = context.new_page()
    page.goto(f"{env.web}/battles/{long_id}?v={late}#v{late}")
    results.check(
        f"?v={late} of a {len(versions)}-event battle shows #v{late} on a windowed page",
        page.locator(f"#v{late}").count() == 1 and page.locator(f"#v{early}").count() == 0,
        f"#v{late}: {page.locator(f'#v{late}').count()}, #v{early}: {page.locator(f'#v{early}').count()}",
    )
    # The page links its whole export (issue 39: no longer embedded), and
    # the link serves every event, whatever the window.
    href = page.evaluate("document.getElementById('export-link')?.href ?? null")
    linked = page.request.get(href).text() if href else ""
    results.check(
        "the windowed page links the whole export",
        len([line for line in linked.splitlines() if line.strip() and '"version"' in line]) >= len(versions),
        f"{href}",
    )
    context.close()


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    import os

    # Needs no gRPC client: the demo battles and /verify.
    try:
        check_russian_throughout(env, browser, results, [(f"demo battle {battle}", link, {}) for battle, link in battles])
        if battles:
            check_verify_in_russian(env, browser, results, env.work / f"{battles[0][0]}.jsonl")
    except Exception:
        results.crashed("page: Russian throughout")
    run_id = f"page-{os.getpid()}"
    resolver = Resolver(env)
    reader = {"Authorization": f"Bearer {bt.token(env, 'reader', 'dev')}"}
    url = None
    try:
        url = check_ruled_battle(env, browser, results, resolver, run_id, reader)
    except Exception:
        results.crashed("page: the ruled battle")
    try:
        if battles:
            no_sideways_scroll(browser, results, "a demo battle page", battles[0][1])
        if url:
            no_sideways_scroll(browser, results, "the ruled battle's page", url, reader)
        no_sideways_scroll(browser, results, "/verify", f"{env.web}/verify")
    except Exception:
        results.crashed("page: sideways scroll")
    targets = [("/verify", f"{env.web}/verify", {})] + ([("battle page", url, reader)] if url else [])
    for name, target, headers in targets:
        status, body = bt.http_status(bt.with_query(target, lang="de"), headers)
        results.check(
            f"{name} ?lang=de: 200 HTML with the notice",
            status == 200 and body.lstrip().lower().startswith("<!doctype html") and 'id="lang-notice"' in body,
            f"HTTP {status}: {body[:200]}",
        )
    try:
        check_long_battle(env, browser, results, resolver, run_id, reader)
    except Exception:
        results.crashed("page: the long battle")
