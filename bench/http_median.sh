#!/usr/bin/env bash
# Median time of N sequential /filter requests of one body through curl, after one warm-up: a quick
# before/after for a change on the request path (two binaries, same body, same machine).
#
# Usage: bench/http_median.sh BINARY BODY.json [N]
set -euo pipefail
BIN=$1
BODY=$2
N=${3:-15}
PORT=${PORT:-18893}
"$BIN" --port "$PORT" --log-level warn >/dev/null 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "localhost:$PORT/healthz" >/dev/null && break; sleep 0.1; done
ANSWER=$(mktemp)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true; rm -f "$ANSWER"' EXIT
# One timed /filter; stops the script (non-zero) unless it answered 200 with an empty Error.
post() {
  local out status seconds
  out=$(curl -s -o "$ANSWER" -w '%{http_code} %{time_total}' -H 'Content-Type: application/json' \
    --data-binary @"$BODY" "http://127.0.0.1:$PORT/filter") || { echo "curl failed" >&2; exit 1; }
  status=${out% *}
  seconds=${out#* }
  if [ "$status" != 200 ] || ! grep -q '"Error":""' "$ANSWER"; then
    echo "/filter answered $status: $(head -c 300 "$ANSWER")" >&2
    exit 1
  fi
  echo "$seconds"
}
post >/dev/null
times=$(for _ in $(seq "$N"); do post || exit 1; done) || exit 1
echo "$times" | sort -n | awk '{t[NR] = $1} END {printf "median %.1f ms of %d\n", t[int((NR + 1) / 2)] * 1000, NR}'
