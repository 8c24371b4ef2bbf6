#!/usr/bin/env python3
"""Checks battlelog's published JSON Schemas with an independent validator
(Python's `jsonschema`, draft 2020-12) against the rules vectors and a real
resolver.

1. ListRulesets gives every ruleset version's sheet, action and outcome
   schema; each is a valid draft 2020-12 schema and equals the file the
   repository keeps under docs/schemas/<ruleset>/.
2. Every script of the rules vectors (the repository's tests/vectors, or
   BATTLELOG_VECTORS when set: rules/ and rules-next/, required): the
   `open` line's participants validate against the version's sheet schema; every action line the vectors resolve
   validates against its action schema, and its expected outcome against
   the outcome schema's $defs/<type>. Every action line validates, those
   the vectors expect the rules to reject included: a schema holds what the
   server reads, and notes in a field's description what the rules check
   of it (refused as FAILED_PRECONDITION with the reason the note names).
3. A table of wrong actions and sheets is refused by both the schema and
   the server, each naming the same field path (the server in the
   google.rpc.BadRequest violation of its INVALID_ARGUMENT).

    python schema_check.py --resolver 127.0.0.1:50051 --token "$TOKEN"
"""

import argparse
import glob
import json
import os
import sys
import time

import grpc
import jsonschema
from google.rpc import error_details_pb2, status_pb2

from forum_client import TIMEOUT, check, open_channel, struct

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))
from battlelog.v1 import resolver_pb2, resolver_pb2_grpc  # noqa: E402

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
Validator = jsonschema.Draft202012Validator

# (ruleset, action, the path both must name). Each is refused by serde when
# the server reads it: INVALID_ARGUMENT.
WRONG_ACTIONS = [
    # a wrong type
    ("pokemon-d6@1", {"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunder", "power": "ninety"},
     "power"),
    # a negative count
    ("pokemon-d6@2", {"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunder", "power": -5},
     "power"),
    # a missing required field: named by the object that lacks it
    ("pokemon-d6@1", {"type": "attack", "actor": "pikachu", "move": "Thunder"}, ""),
    # an unknown field: named itself
    ("pokemon-d6@1", {"type": "pass", "actor": "pikachu", "never_mis": True}, "never_mis"),
    # an enum string out of range
    ("pokemon-d6@1", {"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunder", "prefer": "both"},
     "prefer"),
    ("berserk@1", {"type": "strike", "kind": "kick", "attacker": {"id": "a"}, "defender": {"id": "d"}}, "kind"),
    # an unknown action type
    ("pokemon-d6@1", {"type": "fly", "actor": "pikachu"}, "type"),
    # deep inside
    ("berserk@1", {"type": "strike", "kind": "simple", "attacker": {"id": "a", "strike": [1, "two", 3]},
                   "defender": {"id": "d"}}, "attacker.strike[1]"),
    ("berserk@2", {"type": "strike", "kind": "simple", "attacker": {"id": "a", "x": 1}, "defender": {"id": "d"}},
     "attacker.x"),
    ("arcana-2d10@2", {"type": "cast", "actor": "mage", "skill_points": "seven", "post": "p1"}, "skill_points"),
    ("pbta-2d6@1", {"type": "move", "actor": "ash", "trait": "grit", "helpers": "misty"}, "helpers"),
]

# (ruleset, one participant, the path both must name, under participants[0]).
WRONG_SHEETS = [
    ("arcana-2d10@2", {"id": "necro", "abilities": {"Рука крови": {"per_episode": "two"}}},
     "abilities.Рука крови.per_episode"),
    # a field only @2 knows, on an @1 sheet
    ("arcana-2d10@1", {"id": "mage", "abilities": {"Огненный шар": {"magical": False}}},
     "abilities.Огненный шар.magical"),
    ("arcana-2d10@2", {"id": "mage", "abilities": {"Щит": {"min_points": 13}}}, "abilities.Щит.min_points"),
    ("pbta-2d6@1", {"id": "ash", "traits": {"luck": 1}}, "traits"),
    ("pokemon-d6@1", {"id": "pikachu", "hp": 35}, "hp"),
]

# Fields a version refuses by its rules, not its types: the schema takes
# them and notes the rule on the field (the JSON pointer here); the server
# refuses them as a rule (FAILED_PRECONDITION) with the reason the note names.
VERSION_RULES = [
    ("pokemon-d6@1", {"type": "dodge", "actor": "meowth", "against": 0}, "/$defs/dodge/properties/against"),
    ("pokemon-d6@2", {"type": "dodge", "actor": "meowth"}, "/$defs/dodge/properties/against"),
    ("berserk@2", {"type": "strike", "kind": "simple", "attacker": {"id": "a", "avoid_exchange": True},
                   "defender": {"id": "d"}}, "/$defs/Attacker/properties/avoid_exchange"),
]

BATTLES = {
    "pokemon-d6@1": [{"id": "pikachu"}, {"id": "meowth"}],
    "pokemon-d6@2": [{"id": "pikachu"}, {"id": "meowth"}],
    "berserk@1": [{"id": "a"}, {"id": "d"}],
    "berserk@2": [{"id": "a"}, {"id": "d"}],
    "arcana-2d10@2": [{"id": "mage", "abilities": {"Щит": {"per_episode": 1}}}],
    "pbta-2d6@1": [{"id": "ash", "traits": {"grit": 1}}],
    "pbta-2d6@2": [{"id": "ash", "traits": {"grit": 1}}],
}


def json_path(parts):
    """A jsonschema error path as the server writes it: `a.b[1].c`."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def error_path(error):
    """Where a schema error is: an unknown field is named itself, like the
    server does (jsonschema reports it on the object that holds it)."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        extra = [name for name in error.instance if name not in known]
        if len(extra) == 1:
            path.append(extra[0])
    return json_path(path)


def schema_refusal(schema, instance):
    """The path of the best error the schema finds, or None when valid."""
    error = jsonschema.exceptions.best_match(Validator(schema).iter_errors(instance))
    return None if error is None else error_path(error)


def definition(schema, name):
    """The document's $defs/<name>, with the document's $defs to resolve in."""
    return {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{name}"}


def bad_request_field(error):
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    check(raw is not None, f"no error details: {error.details()}")
    for detail in status_pb2.Status.FromString(raw).details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            return bad.field_violations[0].field
    raise AssertionError(f"no BadRequest in {error.details()}")


def error_reason(error):
    """The google.rpc ErrorInfo reason of a refusal."""
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    check(raw is not None, f"no error details: {error.details()}")
    for detail in status_pb2.Status.FromString(raw).details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info.reason
    raise AssertionError(f"no ErrorInfo in {error.details()}")


def at_pointer(document, pointer):
    """The part of `document` a JSON pointer (RFC 6901) names."""
    for token in pointer.split("/")[1:]:
        document = document[token.replace("~1", "/").replace("~0", "~")]
    return document


def refused(call, request):
    try:
        call(request, timeout=TIMEOUT)
    except grpc.RpcError as error:
        return error
    raise AssertionError(f"the server took {request}")


def published(resolver):
    """The schemas ListRulesets gives, checked against docs/schemas."""
    listed = resolver.ListRulesets(resolver_pb2.ListRulesetsRequest(), timeout=TIMEOUT)
    check([info.id for info in listed.ruleset_infos] == list(listed.rulesets), "ruleset_infos follow rulesets")
    schemas = {}
    for info in listed.ruleset_infos:
        schemas[info.id] = {}
        for name, text in (("sheet", info.sheet_schema), ("action", info.action_schema),
                           ("outcome", info.outcome_schema)):
            with open(os.path.join(REPO, "docs", "schemas", info.id, f"{name}.schema.json"), encoding="utf-8") as f:
                check(f.read() == text, f"{info.id} {name}: ListRulesets differs from docs/schemas")
            schema = json.loads(text)
            Validator.check_schema(schema)
            schemas[info.id][name] = schema
    check(len(schemas) == 8, f"eight ruleset versions, got {sorted(schemas)}")
    return schemas


def vector_scripts():
    # The repository's own copy unless BATTLELOG_VECTORS names another
    # directory (as every test of the vectors reads them).
    root = os.environ.get("BATTLELOG_VECTORS") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "vectors")
    scripts = []
    for directory in ("rules", "rules-next"):
        found = sorted(glob.glob(os.path.join(root, directory, "*.script.jsonl")))
        check(found, f"no *.script.jsonl in {os.path.join(root, directory)}")
        scripts += found
    return scripts


def check_vectors(schemas):
    validated = rejected_by_rules = outcomes = 0
    versions = set()
    for script in vector_scripts():
        with open(script, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
        with open(script.replace(".script.jsonl", ".expected.jsonl"), encoding="utf-8") as f:
            expected = [json.loads(line) for line in f if line.strip()]
        ruleset = lines[0]["open"]["ruleset"]
        versions.add(ruleset)
        schema = schemas[ruleset]
        for participant in lines[0]["open"]["participants"]:
            where = schema_refusal(schema["sheet"], participant)
            check(where is None, f"{script}: participant {participant} refused at {where!r}")
        actions = lines[1:]
        check(len(actions) == len(expected), f"{script}: one expected line per action line")
        for index, (line, want) in enumerate(zip(actions, expected)):
            action = line["action"]
            where = schema_refusal(schema["action"], action)
            check(where is None, f"{script} line {index + 2}: {action} refused by the schema at {where!r}")
            validated += 1
            rejected_by_rules += "rejected" in want
            if "outcome" in want:
                where = schema_refusal(definition(schema["outcome"], action["type"]), want["outcome"])
                check(where is None, f"{script} line {index + 2}: outcome {want['outcome']} refused at {where!r}")
                outcomes += 1
    check(len(versions) == 8, f"vectors of every version, got {sorted(versions)}")
    print(f"vectors: {validated} actions valid ({rejected_by_rules} of them rejected by the rules), "
          f"{outcomes} outcomes valid")


def check_wrong_input(resolver, schemas):
    run = time.time_ns()
    battles = {}
    for ruleset, participants in BATTLES.items():
        battle_id = f"schemas-{ruleset.replace('@', '-v')}-{run:x}"
        resolver.OpenBattle(resolver_pb2.OpenBattleRequest(
            ruleset=ruleset, participants=[struct(p) for p in participants], request_id=f"open-{battle_id}",
            battle_id=battle_id), timeout=TIMEOUT)
        battles[ruleset] = battle_id
    for i, (ruleset, action, path) in enumerate(WRONG_ACTIONS):
        schema_path = schema_refusal(schemas[ruleset]["action"], action)
        check(schema_path == path, f"{ruleset} {action}: the schema names {schema_path!r}, not {path!r}")
        error = refused(resolver.Act, resolver_pb2.ActRequest(
            battle_id=battles[ruleset], action=struct(action), request_id=f"wrong-{i}"))
        check(error.code() == grpc.StatusCode.INVALID_ARGUMENT, f"{action}: {error.code()} {error.details()}")
        server_path = bad_request_field(error)
        want = f"action.{path}" if path else "action"
        check(server_path == want, f"{action}: the server names {server_path!r}, not {want!r}")
        check(error.details().startswith(f"{want}: "), f"{action}: {error.details()}")
        print(f"  {ruleset} {json.dumps(action, ensure_ascii=False)}: both refuse at {want}")
    for i, (ruleset, participant, path) in enumerate(WRONG_SHEETS):
        schema_path = schema_refusal(schemas[ruleset]["sheet"], participant)
        check(schema_path == path, f"{ruleset} {participant}: the schema names {schema_path!r}, not {path!r}")
        error = refused(resolver.OpenBattle, resolver_pb2.OpenBattleRequest(
            ruleset=ruleset, participants=[struct(participant)], request_id=f"wrong-sheet-{run:x}-{i}"))
        check(error.code() == grpc.StatusCode.INVALID_ARGUMENT, f"{participant}: {error.code()} {error.details()}")
        want = f"participants[0].{path}"
        check(bad_request_field(error) == want, f"{participant}: the server names {bad_request_field(error)!r}")
        print(f"  {ruleset} sheet {json.dumps(participant, ensure_ascii=False)}: both refuse at {want}")
    for i, (ruleset, action, pointer) in enumerate(VERSION_RULES):
        where = schema_refusal(schemas[ruleset]["action"], action)
        check(where is None, f"{ruleset} {action}: the schema refuses it at {where!r}: a rule is not the schema's")
        error = refused(resolver.Act, resolver_pb2.ActRequest(
            battle_id=battles[ruleset], action=struct(action), request_id=f"rule-{i}"))
        check(error.code() == grpc.StatusCode.FAILED_PRECONDITION, f"{action}: {error.code()} {error.details()}")
        reason = error_reason(error)
        note = at_pointer(schemas[ruleset]["action"], pointer).get("description", "")
        check(reason in note, f"{ruleset} {action}: the server's reason {reason} is not in the field's note {note!r}")
        print(f"  {ruleset} {json.dumps(action)}: the schema takes it and notes {reason}, the rules refuse it")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resolver", default="127.0.0.1:50051", help="the resolver's host:port")
    parser.add_argument("--ca-file", default=os.environ.get("BATTLELOG_CA_FILE"), help="PEM CA to trust (TLS)")
    parser.add_argument("--token", default=os.environ.get("BATTLELOG_TOKEN"), help="a forum's bearer token")
    args = parser.parse_args()
    if not args.token:
        parser.error("--token (or BATTLELOG_TOKEN) is required")
    with open_channel(args.resolver, args.ca_file, args.token) as channel:
        grpc.channel_ready_future(channel).result(timeout=TIMEOUT)
        resolver = resolver_pb2_grpc.ResolverStub(channel)
        schemas = published(resolver)
        check_vectors(schemas)
        check_wrong_input(resolver, schemas)
    print("schema-check: ok")


if __name__ == "__main__":
    main()
