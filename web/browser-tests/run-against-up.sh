#!/usr/bin/env bash
# CI check of the web service in a real browser: brings up `battlelog up`
# (web service included) on free ports in a temporary data dir and runs
# browser_tests.py against it with headless Chromium (Debian's, driven by
# Playwright for Python; both from scripts/install-tools). The tests play the
# demo themselves, open a battle and forge exports; screenshots go to
# target/browser/. Prints a final
#   browser-tests: N passed, M failed
# and exits non-zero on any failure.
#
# Usage: web/browser-tests/run-against-up.sh path/to/battlelog
# (BROWSER_TESTS_SCRIPT=bench_page.py runs the big-battle benchmark instead;
# BROWSER_TESTS_ONLY=checks_checkpoint,core runs only those checks files —
# `core`: browser_tests.py's own checks — for a change that touches them.)
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 path/to/battlelog" >&2
  exit 2
fi
battlelog="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="$repo/.tools/venv/bin/python"
chromium="${BROWSER_TESTS_CHROMIUM:-/usr/bin/chromium}"

# The summaries are Russian: never let a C locale turn them into an
# encoding error.
export PYTHONIOENCODING=utf-8

work="$(mktemp -d)"
up_pid=""
up_label=browser-tests
ran=0
# shellcheck source=../../scripts/lib/up-stack.sh
source "$repo/scripts/lib/up-stack.sh"

finish() {
  local status=$?
  if [ -n "$up_pid" ]; then
    up_stop || true
  fi
  if [ "$status" = 0 ]; then
    rm -rf "$work"
  else
    # Keep the exports and logs for the post-mortem.
    echo "browser-tests: exports and logs in $work" >&2
    [ -f "$work/up.err" ] && tail -n 20 "$work/up.err" >&2
    # The tests print their own count; a run that never got to them is one failure.
    [ "$ran" = 0 ] && echo "browser-tests: 0 passed, 1 failed"
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

if [ ! -x "$chromium" ]; then
  echo "browser-tests: no Chromium at $chromium (scripts/install-tools installs Debian's)" >&2
  exit 1
fi
if ! "$python" -c 'import playwright' 2>/dev/null; then
  echo "browser-tests: no playwright in $repo/.tools/venv (scripts/install-tools installs it)" >&2
  exit 1
fi
if ! "$battlelog" up --help | grep -q -- '--web-listen'; then
  echo "browser-tests: this battlelog up runs no web service (no --web-listen)" >&2
  exit 1
fi

# Every port free (0): CI may run other stacks at the same time.
up_start --data-dir "$work/data" --no-nats \
  --resolver-listen 127.0.0.1:0 --roller-listen 127.0.0.1:0 --journal-listen 127.0.0.1:0 \
  --web-listen 127.0.0.1:0
# up_start returns once the gRPC endpoints are printed; the web line may
# follow them.
deadline=$((SECONDS + 30))
until web="$(up_url web)" && [ -n "$web" ]; do
  if ! kill -0 "$up_pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
    echo "browser-tests: battlelog up printed no web endpoint" >&2
    exit 1
  fi
  sleep 0.1
done
echo "browser-tests: stack up, web $web" >&2

ran=1
BATTLELOG="$battlelog" \
  WEB_URL="$web" \
  RESOLVER_URL="$(up_url resolver)" \
  DATA_DIR="$work/data" \
  WORK="$work" \
  VERIFIER_TOOLS="$repo/web/verifier/tools" \
  SCREENSHOT_DIR="$repo/target/browser" \
  BROWSER_TESTS_CHROMIUM="$chromium" \
  "$python" "$here/${BROWSER_TESTS_SCRIPT:-browser_tests.py}"
