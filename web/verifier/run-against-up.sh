#!/usr/bin/env bash
# CI check for the JavaScript verifier against the real stack: brings up
# `battlelog up` on free ports in a temporary data dir, plays `battlelog
# demo`, exports every demo battle and checks each with check-export.mjs
# (all must verify); then forges copies — one die changed with the chain
# recomputed after it, one event removed — which must fail at the version
# the forgery touched; a battle left open after one roll must come out
# `unrevealed`, not failed; a copy re-signed with another roller key verifies
# unpinned and fails against up's roller key; and `battlelog roll` and
# verify.js must agree on random expressions (tools/differential.mjs). Every
# action's outcome is re-resolved by the JavaScript rules
# (tools/check-outcomes.mjs) and an outcome forged with the chain recomputed
# fails at its version; the JavaScript and Rust rules must agree on random
# battles (tools/rules-differential.mjs). Prints a final
#   js-verifier: N passed, M failed
# and exits non-zero on any mismatch.
#
# Usage: web/verifier/run-against-up.sh path/to/battlelog
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 path/to/battlelog" >&2
  exit 2
fi
battlelog="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
node="${NODE:-node}"

work="$(mktemp -d)"
up_pid=""
up_label=js-verifier
passed=0
# shellcheck source=../../scripts/lib/up-stack.sh
source "$here/../../scripts/lib/up-stack.sh"
failed=0

finish() {
  local status=$?
  if [ -n "$up_pid" ]; then
    up_stop || true
  fi
  if [ "$status" = 0 ] && [ "$failed" = 0 ] && [ "$passed" -gt 0 ]; then
    rm -rf "$work"
  else
    # Keep the exports and logs for the post-mortem.
    echo "js-verifier: exports and logs in $work" >&2
    [ -f "$work/up.err" ] && tail -n 20 "$work/up.err" >&2
    [ "$failed" = 0 ] && failed=1
    [ "$status" = 0 ] && status=1
  fi
  echo "js-verifier: $passed passed, $failed failed"
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

pass() {
  passed=$((passed + 1))
  echo "js-verifier: ok   $1" >&2
}
fail() {
  failed=$((failed + 1))
  echo "js-verifier: FAIL $1" >&2
}

# check NAME FILE EXPECTED_STATUS EXPECTED_FIRST_FAILURE [ARGS…]: runs
# check-export (with ARGS) and compares its verdict word, its first failing
# version and its exit code.
check() {
  local name="$1" file="$2" want="$3" want_first="$4"
  shift 4
  local out code=0
  out="$("$node" "$here/check-export.mjs" "$file" "$@" 2>"$file.err")" || code=$?
  local got="${out%% *}"
  local first
  first="$(sed -n 's/.*; first failure \([0-9a-z]*\);.*/\1/p' <<<"$out")"
  local want_code=0
  [ "$want" = failed ] && want_code=1
  if [ "$got" = "$want" ] && [ "$first" = "$want_first" ] && [ "$code" = "$want_code" ]; then
    pass "$name: $want, first failure $first"
  else
    fail "$name: expected $want (first failure $want_first, exit $want_code), got: $out (exit $code) $(cat "$file.err")"
  fi
}

# check_outcomes NAME FILE EXPECTED_FIRST_FAILURE: re-resolves every action
# of the export with the JavaScript rules and compares the first action
# whose recorded outcome the rules do not give (`none` when all agree).
check_outcomes() {
  local name="$1" file="$2" want_first="$3"
  local out code=0
  out="$("$node" "$here/tools/check-outcomes.mjs" "$file" 2>&1)" || code=$?
  local first
  first="$(sed -n '1s/.*; first failure \([0-9a-z]*\)$/\1/p' <<<"$out")"
  local want_code=0
  [ "$want_first" != none ] && want_code=1
  if [ "$first" = "$want_first" ] && [ "$code" = "$want_code" ]; then
    pass "$name: outcomes re-resolved, first failure $first"
  else
    fail "$name: expected outcomes first failure $want_first (exit $want_code), got: $out (exit $code)"
  fi
}

# Every port free (0): CI may run other stacks at the same time.
ports=(--resolver-listen 127.0.0.1:0 --roller-listen 127.0.0.1:0 --journal-listen 127.0.0.1:0 --web-listen 127.0.0.1:0)
up_start --data-dir "$work/data" --no-nats "${ports[@]}"

resolver="$(up_url resolver)"
echo "js-verifier: stack up, resolver $resolver" >&2

# The key the operator would publish: the one `up`'s roller signs with.
roller_key="$("$battlelog" roller-key --master-key-file "$work/data/roller/master.key")"
# And the journal's log key (docs/protocol.md §5), as the resolver gives it.
log_key="$("$battlelog" log-key --resolver "$resolver" --data-dir "$work/data")"

# Every demo battle, closed: its export must verify, and forgeries of it fail.
"$battlelog" demo --resolver "$resolver" --data-dir "$work/data" >"$work/demo.out"
battles="$(sed -n 's/^=== .* — battle \([A-Za-z0-9_-]*\)$/\1/p' "$work/demo.out")"
if [ -z "$battles" ]; then
  echo "js-verifier: the demo printed no battle id" >&2
  exit 1
fi
for battle in $battles; do
  export_file="$work/$battle.jsonl"
  "$battlelog" export "$battle" --resolver "$resolver" --data-dir "$work/data" >"$export_file"
  check "demo $battle" "$export_file" verified none
  # Its commitments are signed by this roller's key, and by no other.
  check "demo $battle, signed by the roller key" "$export_file" verified none --roller-key "$roller_key"
  check "demo $battle, another roller key given" "$export_file" failed 0 --roller-key "$(printf '0%.0s' {1..64})"

  # tamper.mjs prints the version it touched: the expected first failure.
  version="$("$node" "$here/tools/tamper.mjs" die "$export_file" "$work/$battle.die.jsonl" last-roll)"
  check "demo $battle, die at version $version changed and the chain recomputed" "$work/$battle.die.jsonl" failed "$version"
  version="$("$node" "$here/tools/tamper.mjs" drop "$export_file" "$work/$battle.drop.jsonl" last-action)"
  check "demo $battle, version $version removed" "$work/$battle.drop.jsonl" failed "$version"

  # Re-signed end to end with another roller key: every signature holds, so
  # only the operator's key tells; the first failure is the first commitment.
  "$node" "$here/tools/tamper.mjs" resign "$export_file" "$work/$battle.resign.jsonl" >/dev/null
  check "demo $battle, re-signed with another key, no key given" "$work/$battle.resign.jsonl" verified none
  check "demo $battle, re-signed with another key, the roller key given" "$work/$battle.resign.jsonl" failed 0 --roller-key "$roller_key"

  # Cut short at the end, the chain still holds; the head the forum
  # posted (the export's last event's hash) catches it, and so does the
  # trailer (docs/protocol.md §5) when it is kept: its signed head is a later
  # version. The trailer is the last line, the one without a version.
  # split_export FILE EVENTS_OUT TRAILER_OUT: the event lines and the
  # trailer line apart (JSON read, never grepped: a trailer names a version too).
  "$node" -e '
    const fs = require("fs");
    const lines = fs.readFileSync(process.argv[1], "utf8").split("\n").filter((l) => l.trim() !== "");
    const isEvent = (l) => "version" in JSON.parse(l);
    fs.writeFileSync(process.argv[2], lines.filter(isEvent).map((l) => l + "\n").join(""));
    fs.writeFileSync(process.argv[3], lines.filter((l) => !isEvent(l)).map((l) => l + "\n").join(""));
  ' "$export_file" "$work/$battle.events.jsonl" "$work/$battle.trailer.jsonl"
  events="$(grep -c '' "$work/$battle.events.jsonl")"
  head="$("$node" -e 'const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n"); console.log(JSON.parse(l.at(-1)).hash)' "$work/$battle.events.jsonl")"
  head -n "$((events - 1))" "$work/$battle.events.jsonl" >"$work/$battle.cut.jsonl"
  check "demo $battle, last event cut (and the trailer), --head given" "$work/$battle.cut.jsonl" failed "$((events - 1))" --head "$head"
  check "demo $battle, --head given" "$export_file" verified none --head "$head"
  if [ "$(grep -c '' "$work/$battle.trailer.jsonl")" = 1 ]; then
    cat "$work/$battle.cut.jsonl" "$work/$battle.trailer.jsonl" >"$work/$battle.cut-kept.jsonl"
    check "demo $battle, last event cut, trailer kept" "$work/$battle.cut-kept.jsonl" failed "$((events - 1))"
    check "demo $battle, the journal's log key pinned" "$export_file" verified none --log-key "$log_key"
    check "demo $battle, another log key pinned" "$export_file" failed "$events" --log-key "other.example/log+00000000+AQ=="
  else
    fail "demo $battle: the export does not end with one trailer line (docs/protocol.md §5)"
  fi

  # The rules re-resolve every outcome; a forged one (chain recomputed) fails.
  check_outcomes "demo $battle" "$export_file" none
  version="$("$node" "$here/tools/tamper.mjs" outcome "$export_file" "$work/$battle.outcome.jsonl")"
  check_outcomes "demo $battle, outcome at version $version forged and the chain recomputed" "$work/$battle.outcome.jsonl" "$version"
done

# A battle left open after one roll: its seed is secret, so `unrevealed`.
token="$("$battlelog" token issue --role forum --tenant dev --subject js-verifier --ttl 10m --data-dir "$work/data")"
open_battle="$(BATTLELOG_TOKEN="$token" "$node" "$here/tools/open-and-act.mjs" "$resolver")"
"$battlelog" export "$open_battle" --resolver "$resolver" --data-dir "$work/data" >"$work/open.jsonl"
check "open battle $open_battle" "$work/open.jsonl" unrevealed none
version="$("$node" "$here/tools/tamper.mjs" drop "$work/open.jsonl" "$work/open.drop.jsonl" first-roll)"
check "open battle, version $version removed" "$work/open.drop.jsonl" failed "$version"

# Random battles of every ruleset version played through the resolver, with
# disputes, rulings (a judge's token) and overrides: every outcome must
# re-resolve, and verify.
judge_token="$("$battlelog" token issue --role judge --tenant dev --subject judge-anna --ttl 10m --data-dir "$work/data")"
BATTLELOG_TOKEN="$token" BATTLELOG_JUDGE_TOKEN="$judge_token" \
  "$node" "$here/tools/rules-battle.mjs" "$resolver" 30 "${JS_RULES_BATTLE_SEED:-8}" >"$work/rules-battles.txt"
while read -r battle ruleset taken refused; do
  "$battlelog" export "$battle" --resolver "$resolver" --data-dir "$work/data" >"$work/$battle.jsonl"
  check "random $ruleset battle $battle ($taken actions taken, $refused refused)" "$work/$battle.jsonl" verified none
  check_outcomes "random $ruleset battle $battle" "$work/$battle.jsonl" none
done <"$work/rules-battles.txt"

up_stop || true

# The two implementations on random expressions, valid and not: every die,
# every total and every refusal must agree. A fixed seed keeps CI
# reproducible; set JS_VERIFIER_DIFF_SEED to explore others.
if out="$("$node" "$here/tools/differential.mjs" "$battlelog" 300 "${JS_VERIFIER_DIFF_SEED:-12}" 2>&1)"; then
  pass "${out##*$'\n'}"
else
  fail "$out"
fi

# The JavaScript and Rust rules on random battles of every ruleset version
# (about 1 500 actions, a few seconds): every outcome, rejection and dice
# error must agree. Set JS_RULES_DIFF_SEED to explore other battles.
if out="$("$node" "$here/tools/rules-differential.mjs" "$battlelog" 1500 "${JS_RULES_DIFF_SEED:-21}" 2>&1)"; then
  pass "${out##*$'\n'}"
else
  fail "$out"
fi
