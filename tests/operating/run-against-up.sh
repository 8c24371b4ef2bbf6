#!/usr/bin/env bash
# CI check of the services' metrics: brings up the whole stack with
# `battlelog up` on free ports, plays `battlelog demo` against it, exports
# every battle the demo played, then checks with check_metrics.py that each
# service's /metrics (the addresses `up` printed) parses with Prometheus's
# own Python parsers and that its counters match what the demo did. Prints
#   metrics-check: 1 passed, 0 failed
# (or 0 passed, 1 failed) so the result reads like a test in CI output.
#
# Usage: tests/operating/run-against-up.sh path/to/battlelog
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 path/to/battlelog" >&2
  exit 2
fi
battlelog="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export PYTHONIOENCODING=utf-8

work="$(mktemp -d)"
up_pid=""
up_label=metrics-check
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
    echo "metrics-check: 1 passed, 0 failed"
  else
    echo "metrics-check: logs in $work" >&2
    [ -f "$work/up.err" ] && tail -n 20 "$work/up.err" >&2
    echo "metrics-check: 0 passed, 1 failed"
    [ "$status" = 0 ] && status=1
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

venv="$repo/.tools/venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: -r "$here/requirements.txt" >&2

up_start --data-dir "$work/data" --no-nats \
  --resolver-listen 127.0.0.1:0 --roller-listen 127.0.0.1:0 --journal-listen 127.0.0.1:0 --web-listen 127.0.0.1:0
resolver="$(up_url resolver)"
"$battlelog" demo --resolver "$resolver" --data-dir "$work/data" >"$work/demo.out"
mkdir "$work/exports"
sed -n 's/^battlelog export \([^ ]*\) .*/\1/p' "$work/demo.out" | while read -r battle; do
  "$battlelog" export "$battle" --resolver "$resolver" --data-dir "$work/data" >"$work/exports/$battle.jsonl"
done

endpoints=()
for service in resolver roller journal web; do
  url="$(up_metrics_url "$service")"
  if [ -z "$url" ]; then
    echo "metrics-check: battlelog up printed no metrics address for the $service" >&2
    exit 1
  fi
  endpoints+=("$service=$url")
done
"$venv/bin/python" "$here/check_metrics.py" --demo-output "$work/demo.out" --exports "$work/exports" "${endpoints[@]}"

up_stop
passed=1
