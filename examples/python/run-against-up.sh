#!/usr/bin/env bash
# CI check for the Python example: brings up the whole stack with
# `battlelog up --tls` on free ports, checks with reflection_check.py that
# grpcio-reflection (v1alpha) lists each port's services, runs
# forum_client.py against it over TLS
# (trusting the development CA `up` generated), then exports the battle it
# played and audits the export offline against the head hash Close gave. Prints a final
#   python-example: 1 passed, 0 failed
# (or 0 passed, 1 failed) so the result reads like a test in CI output.
#
# Usage: examples/python/run-against-up.sh path/to/battlelog
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 path/to/battlelog" >&2
  exit 2
fi
battlelog="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

# The server's summaries are Russian: never let a C locale turn them into an
# encoding error.
export PYTHONIOENCODING=utf-8

work="$(mktemp -d)"
up_pid=""
up_label=python-example
passed=0
# shellcheck source=../../scripts/lib/up-stack.sh
source "$repo/scripts/lib/up-stack.sh"


finish() {
  local status=$?
  if [ -n "$up_pid" ]; then
    up_stop || true
  fi
  if [ "$passed" = 1 ] && [ "$status" = 0 ]; then
    rm -rf "$work"
    echo "python-example: 1 passed, 0 failed"
  else
    # Keep the logs for the post-mortem.
    echo "python-example: logs in $work" >&2
    [ -f "$work/up.err" ] && tail -n 20 "$work/up.err" >&2
    echo "python-example: 0 passed, 1 failed"
    [ "$status" = 0 ] && status=1
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

# The venv scripts/install-tools made for nats-server; a fresh one otherwise.
venv="$repo/.tools/venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: -r "$here/requirements.txt" >&2
# A relative PYTHON, as the README and generate.sh's own usage show it: the
# script must find it from where it was started.
(cd "$repo" && PYTHON=.tools/venv/bin/python examples/python/generate.sh "$here/gen")

up_start --tls --data-dir "$work/data" --no-nats \
  --resolver-listen 127.0.0.1:0 --roller-listen 127.0.0.1:0 --journal-listen 127.0.0.1:0 --web-listen 127.0.0.1:0
resolver="$(up_url resolver)"
echo "python-example: stack up, resolver $resolver" >&2

# The development CA `up --tls` wrote under its data dir.
ca="$work/data/tls/ca.pem"

# Server reflection as grpcio-reflection asks it (v1alpha), on every port:
# each lists its own services. The journal and roller want the client
# certificate `up --tls` made.
"$venv/bin/python" "$here/reflection_check.py" --ca-file "$ca" \
  --client-cert "$work/data/tls/client.pem" --client-key "$work/data/tls/client.key" \
  "resolver=${resolver#https://}" "roller=$(up_url roller | sed 's|^https://||')" \
  "journal=$(up_url journal | sed 's|^https://||')"
# A forum's token, signed with the development key `up` keeps under its data
# dir (an operator issues one with `--key` instead).
token="$("$battlelog" token issue --role forum --tenant dev --subject python-forum --ttl 10m --data-dir "$work/data")"
BATTLELOG_TOKEN="$token" "$venv/bin/python" "$here/forum_client.py" --resolver "${resolver#https://}" --ca-file "$ca" \
  | tee "$work/client.out"
# The published JSON Schemas, checked with Python's jsonschema against the
# rules vectors (tests/vectors, or BATTLELOG_VECTORS) and this resolver's
# refusals.
BATTLELOG_TOKEN="$token" "$venv/bin/python" "$here/schema_check.py" --resolver "${resolver#https://}" --ca-file "$ca"
battle_id="$(sed -n 's/^battle-id: //p' "$work/client.out")"
head_hash="$(sed -n 's/^head-hash: //p' "$work/client.out")"
if [ -z "$battle_id" ] || [ -z "$head_hash" ]; then
  echo "python-example: the client printed no battle id or head hash" >&2
  exit 1
fi

# The export comes from the resolver, which checks that the battle is this
# tenant's; --data-dir finds the CA and mints a reader token of tenant `dev`.
"$battlelog" export "$battle_id" --resolver "$resolver" --data-dir "$work/data" >"$work/battle.jsonl"
# Pinned to the roller key the operator publishes: here the one of the
# development master key `up` keeps under its data dir.
roller_key="$("$battlelog" roller-key --master-key-file "$work/data/roller/master.key")"
# The journal's log key, as the operator publishes it: the export's trailer
# (docs/protocol.md §5) must be signed by it.
log_key="$("$battlelog" log-key --resolver "$resolver" --data-dir "$work/data")"
# The head the Close reply gave, as a forum would have posted it: the export
# must end exactly there.
"$battlelog" audit --file "$work/battle.jsonl" --head "$head_hash" --roller-key "$roller_key" --log-key "$log_key"

up_stop
passed=1
