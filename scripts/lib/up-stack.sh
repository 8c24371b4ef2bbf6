# Sourced by the scripts that check a client against a real `battlelog up`
# (examples/python, web/verifier): starting the stack on free ports, waiting
# for its endpoints, and stopping it, written once.
#
# Set before use: `battlelog` (the binary), `work` (a temporary directory),
# `up_label` (the prefix of every message), and `up_pid=""`.

# up_start ARGS…: runs `battlelog up ARGS…` in the background, its output in
# $work/up.out and $work/up.err, and returns once all three servers listen
# (`up` prints its endpoints then); exits 1 if it dies or is silent for 60 s.
up_start() {
  "$battlelog" up "$@" >"$work/up.out" 2>"$work/up.err" &
  up_pid=$!
  local deadline=$((SECONDS + 60))
  until [ -n "$(up_url journal)" ]; do
    if ! kill -0 "$up_pid" 2>/dev/null; then
      echo "$up_label: battlelog up exited early" >&2
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$up_label: battlelog up printed no endpoints within 60 s" >&2
      exit 1
    fi
    sleep 0.1
  done
}

# up_url NAME: the endpoint `up` printed for NAME (journal, roller, resolver).
up_url() {
  sed -n "s|^  $1  *\(https\{0,1\}://[^ ]*\)$|\1|p" "$work/up.out" 2>/dev/null
}

# up_stop: Ctrl-C for `up`, a graceful shutdown. A stack that does not stop
# within 20 s is killed, so that CI never hangs; returns `up`'s status.
up_stop() {
  local deadline=$((SECONDS + 20))
  kill -INT "$up_pid" 2>/dev/null || true
  while kill -0 "$up_pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
  if kill -0 "$up_pid" 2>/dev/null; then
    echo "$up_label: battlelog up ignored SIGINT for 20 s; killing it" >&2
    kill -KILL "$up_pid" 2>/dev/null || true
  fi
  local status=0
  wait "$up_pid" || status=$?
  up_pid=""
  return "$status"
}

# up_metrics_url NAME: where `up` serves NAME's /metrics (resolver, roller,
# journal, web, webhooks): the `metrics:` line `up` prints under NAME's own.
up_metrics_url() {
  awk -v name="$1" '
    $1 == name { under = 1; next }
    under && $1 == "metrics:" { print $2; exit }
    { under = 0 }' "$work/up.out" 2>/dev/null
}
