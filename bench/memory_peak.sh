#!/usr/bin/env bash
# Peak and retained resident memory of the real binary for one request body, sent C times at once:
# what --memory-budget-bytes is sized on (docs/security.md, "Memory").
#
# Usage: bench/memory_peak.sh BODY.json [CONCURRENCY] [EXTRA SERVER FLAGS...]
#   prints: status codes, RSS before, peak (VmHWM) and RSS one second after the answers.
# A dense body (20,000 nodes of small numbers, ~89 MB) shows the worst ratio:
#   python3 -c 'import sys; j="["+",".join(["1"]*2200)+"]"; sys.stdout.write("{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":{\"items\":["+",".join("{\"metadata\":{\"name\":\"n%d\"},\"junk\":%s}"%(i,j) for i in range(20000))+"]}}")' > /tmp/dense.json
set -euo pipefail
BODY=$1
CONCURRENCY=${2:-1}
shift $(( $# >= 2 ? 2 : 1 ))
BIN=${BIN:-build/gpu-extender}
PORT=${PORT:-18891}
"$BIN" --port "$PORT" --log-level warn "$@" >/dev/null 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "localhost:$PORT/healthz" >/dev/null && break; sleep 0.1; done
rss() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$PID/status"; }
before=$(rss VmRSS)
clients=()
for _ in $(seq "$CONCURRENCY"); do
  curl -s -o /dev/null -w '%{http_code} ' -H 'Content-Type: application/json' --data-binary @"$BODY" \
    "http://127.0.0.1:$PORT/filter" &
  clients+=($!)
done
wait "${clients[@]}"
echo
peak=$(rss VmHWM)
sleep 1
echo "body=$(basename "$BODY") ($(stat -c %s "$BODY") bytes) concurrency=$CONCURRENCY rss_before=${before}KiB peak=${peak}KiB rss_after=$(rss VmRSS)KiB"
