#!/usr/bin/env python3
"""A forum-side battlelog client: what a forum platform runs when a thread
starts a battle and its players post actions.

It opens a Pokémon battle on the resolver, acts a few times, shows what a
retry, a rules rejection and bad input look like, closes the battle and
prints the posts the forum would paste into the thread.

The stubs are generated, not written: run generate.sh first (see README.md).
Every invariant the script shows is also asserted, so a CI run fails loudly
when the server stops keeping one.

    python forum_client.py --resolver 127.0.0.1:50051 --token "$TOKEN"
    python forum_client.py --resolver 127.0.0.1:50051 --ca-file data/tls/ca.pem --token "$TOKEN"   # up --tls
"""

import argparse
import json
import os
import re
import sys
import time

import grpc
import jsonschema
from google.protobuf import json_format, struct_pb2
from google.rpc import error_details_pb2, status_pb2

# generate.sh writes the battlelog.v1 package next to this file.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))
from battlelog.v1 import resolver_pb2, resolver_pb2_grpc  # noqa: E402


RULESET = "pokemon-d6@2"
# Posts come back in the format the forum's engine speaks: BBCode for phpBB,
# XenForo and vBulletin.
POST_FORMAT = resolver_pb2.POST_FORMAT_BBCODE
# Every call gets a deadline: a forum request must never hang on the server.
TIMEOUT = 10.0


def check(condition, message):
    """Like assert, but not switched off by `python -O`: CI relies on it."""
    if not condition:
        raise AssertionError(message)


def without_checkpoint(reply):
    """A reply without the journal's checkpoint: the newest when it was answered,
    so a retry answered later may carry a newer one (docs/protocol.md §5); all else
    a retry answers is the recorded result."""
    copy = type(reply)()
    copy.CopyFrom(reply)
    copy.ClearField("checkpoint")
    return copy


def struct(fields):
    """Actions and sheets travel as google.protobuf.Struct (docs/rules.md names)."""
    message = struct_pb2.Struct()
    message.update(fields)
    return message


def whole(value):
    """Whole doubles as ints, all the way down."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole(v) for v in value]
    return value


def plain(message):
    """A Struct back to a dict. A Struct holds every number as a double;
    replies that carry outcomes also give them as JSON text
    (`outcome_json`) with whole numbers whole, which is what a forum should
    read. This is for the Structs that have no such twin."""
    return whole(json_format.MessageToDict(message))


def battle_id_for(thread_ref):
    """A battle id (1–128 of [A-Za-z0-9_-]) that is a function of the thread."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", thread_ref)[:128]


def error_details(error):
    """The google.rpc details of a failed call, as short readable strings.

    The server puts a google.rpc.Status into the grpc-status-details-bin
    trailer; its details say why (ErrorInfo: domain battlelog.dev, a stable
    reason and metadata such as the rule's docs/rules.md section), which field
    was wrong (BadRequest) and the message in the language asked for with
    accept-language (LocalizedMessage; see docs/errors.md).
    """
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    if raw is None:
        return []
    status = status_pb2.Status.FromString(raw)
    lines = []
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            lines += [f"BadRequest: field {v.field!r}: {v.description}" for v in bad.field_violations]
        elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            metadata = ", ".join(f"{k}={v}" for k, v in sorted(info.metadata.items()))
            lines.append(f"ErrorInfo: {info.reason} ({info.domain}) {metadata}".rstrip())
        elif detail.Is(error_details_pb2.LocalizedMessage.DESCRIPTOR):
            message = error_details_pb2.LocalizedMessage()
            detail.Unpack(message)
            lines.append(f"LocalizedMessage [{message.locale}]: {message.message}")
        else:
            lines.append(f"detail {detail.type_url}")
    return lines


def error_info(error):
    """The refusal's google.rpc ErrorInfo (domain, stable reason, metadata)
    and its LocalizedMessages by locale: what a forum branches on and shows
    its players, never the English status text."""
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    check(raw is not None, "a refusal carries google.rpc details")
    status = status_pb2.Status.FromString(raw)
    info, messages = None, {}
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
        elif detail.Is(error_details_pb2.LocalizedMessage.DESCRIPTOR):
            message = error_details_pb2.LocalizedMessage()
            detail.Unpack(message)
            messages[message.locale] = message.message
    check(info is not None, "a refusal carries a google.rpc ErrorInfo")
    return info, messages


def expect_error(code, call, *args, **kwargs):
    """Calls `call`, which must fail with `code`; returns the RpcError."""
    try:
        call(*args, timeout=TIMEOUT, **kwargs)
    except grpc.RpcError as error:
        check(error.code() == code, f"expected {code.name}, got {error.code().name}: {error.details()}")
        print(f"  -> {error.code().name}: {error.details()}")
        for line in error_details(error):
            print(f"     {line}")
        return error
    raise AssertionError(f"expected {code.name}, but the call succeeded")


def is_hash(text):
    """A chain hash as replies give it: 64 lowercase hex digits."""
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


class Thread:
    """One forum thread playing one battle: keeps the posts and checks that
    the dice nonces run 0, 1, 2 … with no gap and no repeat."""

    def __init__(self, resolver, battle_id, action_schema):
        self.resolver = resolver
        self.battle_id = battle_id
        # The ruleset's published action schema (ListRulesets): an action is
        # checked before it is sent, so a mistake is caught with the field's
        # path on the forum's side, the same path the server would name.
        self.validator = jsonschema.Draft202012Validator(action_schema)
        self.next_nonce = 0
        self.posts = []

    def act(self, request_id, action):
        problems = [f"{e.json_path}: {e.message}" for e in self.validator.iter_errors(action)]
        check(not problems, f"the action does not fit {RULESET}'s schema: {problems}")
        request = resolver_pb2.ActRequest(battle_id=self.battle_id, action=struct(action), request_id=request_id,
                                          post_format=POST_FORMAT)
        response = self.resolver.Act(request, timeout=TIMEOUT)
        check(is_hash(response.head_hash), f"Act's head_hash is 64 lowercase hex digits: {response.head_hash!r}")
        check(response.permalink == "" or response.permalink.endswith(f"#v{response.version}"),
              f"Act's permalink points at its version {response.version}: {response.permalink}")
        for recorded in response.rolls:
            check(recorded.roll.nonce == self.next_nonce,
                  f"nonce {recorded.roll.nonce}, expected {self.next_nonce}: a gap or a re-roll")
            self.next_nonce += 1
        self.post(action, response)
        return request, response

    def post(self, action, response):
        """What the forum pastes under the player's post: the server writes
        it, in the format asked for (BBCode here), in Russian and English,
        with the event's link on the battle's page (when the server has a web
        service) and the head hash, which lets whoever reads the post check
        later that an export of the battle reaches it (battlelog audit
        --head)."""
        post = response.post
        check(post.format == POST_FORMAT, f"the post comes in the format asked for, not {post.format}")
        for language, text in (("ru", post.ru), ("en", post.en)):
            check(response.head_hash in text, f"the {language} post carries the head hash")
            check(not response.permalink or f"[url={response.permalink}]" in text,
                  f"the {language} post links the event: {text}")
        # The outcome as JSON text keeps whole numbers whole (a Struct makes
        # every number a double).
        outcome = json.loads(response.outcome_json)
        check(outcome == plain(response.resolved.outcome), "outcome_json is the journaled outcome")
        self.posts.append(f"{post.ru}\n\n{post.en}")
        nonces = ", ".join(str(r.roll.nonce) for r in response.rolls) or "none"
        print(f"  {action['type']} -> version {response.version}, dice nonces {nonces}")

    def server_next_nonce(self):
        state = self.resolver.GetBattle(resolver_pb2.GetBattleRequest(battle_id=self.battle_id), timeout=TIMEOUT)
        return state.next_nonce


def play(resolver, thread_ref):
    print("== ListRulesets")
    listed = resolver.ListRulesets(resolver_pb2.ListRulesetsRequest(), timeout=TIMEOUT)
    print("  " + ", ".join(listed.rulesets))
    infos = {info.id: info for info in listed.ruleset_infos}
    check(RULESET in infos, f"{RULESET} is not served")
    # The ruleset's JSON Schemas (draft 2020-12): a sheet, each action, each
    # outcome. The sheets and actions below are checked against them.
    sheet_schema = json.loads(infos[RULESET].sheet_schema)
    action_schema = json.loads(infos[RULESET].action_schema)
    participants = [{"id": "pikachu"}, {"id": "meowth"}]
    for sheet in participants:
        jsonschema.validate(sheet, sheet_schema, cls=jsonschema.Draft202012Validator)

    print("\n== OpenBattle")
    open_request = resolver_pb2.OpenBattleRequest(
        ruleset=RULESET,
        title="Pikachu vs Meowth",
        forum_ref=thread_ref,
        participants=[struct(sheet) for sheet in participants],
        # Public and mixed into every roll: the thread itself, so players
        # know the server could not pick the dice before the thread existed.
        client_seed=thread_ref,
        # Both derived from the forum's own ids. The request id is scoped to
        # the battle, so only with our own battle id does a resent OpenBattle
        # (after a timeout) find the first one instead of opening a second.
        battle_id=battle_id_for(thread_ref),
        request_id=f"{thread_ref}/open",
        post_format=POST_FORMAT,
    )
    opened = resolver.OpenBattle(open_request, timeout=TIMEOUT)
    battle_id = opened.battle_id
    print(f"  battle {battle_id}, seed commitment {opened.opened.commitment}")
    reopened = resolver.OpenBattle(open_request, timeout=TIMEOUT)
    check(reopened == opened, "a resent OpenBattle must answer with the same battle")
    print("  resent with the same request id -> the same battle, the same commitment")
    check(opened.opened.commitment in opened.post.en, "the opening post carries the seed commitment")
    thread = Thread(resolver, battle_id, action_schema)

    print("\n== Act: an attack, a dodge, a free roll")
    attack_request, attack = thread.act(
        f"{thread_ref}/post-1",
        {"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90,
         "effect": "paralysis"},
    )
    # Under pokemon-d6@2 a dodge names the attack it answers by its battle
    # version; the server takes the damage and priority from that attack
    # (against a miss there is nothing to dodge and no die is rolled).
    _, dodge = thread.act(
        f"{thread_ref}/post-2",
        {"type": "dodge", "actor": "meowth", "against": attack.version},
    )
    check(plain(dodge.resolved.outcome).get("result") in ("rolled", "not_needed"),
          "a dodge of a hit is rolled, a dodge of a miss is not needed")
    thread.act(
        f"{thread_ref}/post-3",
        {"type": "roll", "actor": "ash", "expression": "2d6+1", "purpose": "Pokédex check"},
    )

    print("\n== Retry: the attack again with its request id (the forum timed out and resent)")
    retried = resolver.Act(attack_request, timeout=TIMEOUT)
    check(without_checkpoint(retried) == without_checkpoint(attack), "a retry must return the recorded resolution")
    check(thread.server_next_nonce() == thread.next_nonce, "a retry must not roll again")
    print(f"  -> the recorded result of #{retried.version}, dice unchanged: "
          + "; ".join(r.rendering for r in retried.rolls))

    print("\n== A rules rejection: an attack on a Pokémon that is not in the battle")
    expect_error(
        grpc.StatusCode.FAILED_PRECONDITION,
        resolver.Act,
        resolver_pb2.ActRequest(
            battle_id=battle_id,
            action=struct({"type": "attack", "actor": "pikachu", "target": "psyduck", "move": "Tackle"}),
            request_id=f"{thread_ref}/post-4",
        ),
    )
    check(thread.server_next_nonce() == thread.next_nonce, "a rejected action must draw no dice")

    print("\n== A rules rejection in Russian: a second dodge of the same attack (accept-language: ru)")
    # A forum branches on the stable reason, shows its players the message
    # in their language, and can link the rule (docs/rules.md §6.1, item 3: a
    # dodge answers one attack).
    error = expect_error(
        grpc.StatusCode.FAILED_PRECONDITION,
        resolver.Act,
        resolver_pb2.ActRequest(
            battle_id=battle_id,
            action=struct({"type": "dodge", "actor": "meowth", "against": attack.version}),
            request_id=f"{thread_ref}/post-5",
        ),
        metadata=(("accept-language", "ru-RU,ru;q=0.9,en;q=0.5"),),
    )
    info, messages = error_info(error)
    check(info.domain == "battlelog.dev", f"the refusal's domain: {info.domain}")
    check(info.reason == "ATTACK_ALREADY_DODGED", f"the refusal's reason: {info.reason}")
    check(info.metadata.get("section") == "docs/rules.md §6.1.3", f"the refusal names its rule: {dict(info.metadata)}")
    russian = messages.get("ru", "")
    check(re.search("[а-яё]", russian, re.IGNORECASE), f"the refusal speaks Russian when asked: {messages}")
    check(set(messages) == {"ru"}, f"only the language asked for comes back: {sorted(messages)}")
    print(f"  -> {info.reason}: «{russian}»")
    check(thread.server_next_nonce() == thread.next_nonce, "a rejected action must draw no dice")

    print("\n== Bad input: a request without a request id")
    error = expect_error(
        grpc.StatusCode.INVALID_ARGUMENT,
        resolver.Act,
        resolver_pb2.ActRequest(
            battle_id=battle_id,
            action=struct({"type": "roll", "actor": "ash", "expression": "1d6"}),
        ),
    )
    check(any("'request_id'" in line for line in error_details(error)), "BadRequest must name request_id")

    print("\n== Close")
    closed = resolver.Close(
        resolver_pb2.CloseRequest(battle_id=battle_id, by="forum moderator", reason="the thread is over",
                                  request_id=f"{thread_ref}/close", post_format=POST_FORMAT),
        timeout=TIMEOUT,
    )
    check(closed.event.WhichOneof("event") == "battle_closed", f"Close answered {closed}")
    state = resolver.GetBattle(resolver_pb2.GetBattleRequest(battle_id=battle_id), timeout=TIMEOUT)
    check(state.closed, "the battle must be closed")
    print(f"  closed at version {closed.version}; the server seed is revealed")
    check(is_hash(closed.head_hash), f"Close's head_hash is 64 lowercase hex digits: {closed.head_hash!r}")
    if closed.permalink:
        print(f"  the battle's page: {closed.permalink.split('#')[0]}")

    check(closed.head_hash in closed.post.ru and closed.head_hash in closed.post.en, "the closing post's head hash")

    print("\n== The forum thread, in BBCode")
    print("\n\n".join([f"{opened.post.ru}\n\n{opened.post.en}"] + thread.posts + [f"{closed.post.ru}\n\n{closed.post.en}"]))
    return battle_id, closed.head_hash


def open_channel(resolver, ca_file, token):
    """The one place the channel to the resolver is built: TLS trusting the
    CA in `ca_file` (PEM), with the forum's bearer token on every call
    (`authorization: Bearer <token>`, as the resolver requires). gRPC sends
    call credentials only over TLS; a plaintext channel (a stack without
    TLS, on loopback) carries the token as call metadata instead."""
    if ca_file:
        with open(ca_file, "rb") as f:
            tls = grpc.ssl_channel_credentials(root_certificates=f.read())
        credentials = grpc.composite_channel_credentials(tls, grpc.access_token_call_credentials(token))
        return grpc.secure_channel(resolver, credentials)
    bearer = ("authorization", f"Bearer {token}")
    return grpc.intercept_channel(grpc.insecure_channel(resolver), _Metadata(bearer))


class _Metadata(grpc.UnaryUnaryClientInterceptor):
    """Adds one metadata pair to every unary call (plaintext channels only)."""

    def __init__(self, pair):
        self.pair = pair

    def intercept_unary_unary(self, continuation, details, request):
        metadata = list(details.metadata or []) + [self.pair]
        details = details._replace(metadata=metadata)
        return continuation(details, request)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resolver", default="127.0.0.1:50051", help="the resolver's host:port")
    parser.add_argument("--ca-file", default=os.environ.get("BATTLELOG_CA_FILE"),
                        help="PEM CA to trust: connect over TLS (battlelog up --tls writes data/tls/ca.pem)")
    parser.add_argument("--token", default=os.environ.get("BATTLELOG_TOKEN"),
                        help="the forum's bearer token (battlelog token issue --role forum ...)")
    parser.add_argument("--thread", default=None,
                        help="the forum thread reference; a fresh one per run by default")
    args = parser.parse_args()
    if not args.token:
        parser.error("--token (or BATTLELOG_TOKEN) is required: every call to the resolver carries one")
    thread_ref = args.thread or f"forum:example/thread/{time.time_ns():x}"

    with open_channel(args.resolver, args.ca_file, args.token) as channel:
        grpc.channel_ready_future(channel).result(timeout=TIMEOUT)
        battle_id, head_hash = play(resolver_pb2_grpc.ResolverStub(channel), thread_ref)
    print(f"\nbattle-id: {battle_id}")
    print(f"head-hash: {head_hash}")


if __name__ == "__main__":
    main()
