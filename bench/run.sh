#!/usr/bin/env bash
# The benchmark suite: one command, prints a table and writes bench/results/results.json.
#
#   bench/run.sh                 # everything; SOAK_SECONDS=60 by default
#   SOAK_SECONDS=10 bench/run.sh # a shorter soak
#
# Loopback only; bounded in time (about 6 minutes plus the soak). Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
GEN=${GEN:-$ROOT/bench/gen_requests.py}
OUT=$ROOT/bench/results
DATA=$OUT/data
SOAK_SECONDS=${SOAK_SECONDS:-60}
BUILD=${BUILD:-build}
mkdir -p "$DATA"

make build >/dev/null
BIN=$ROOT/$BUILD

echo "== generating request bodies (seed 1) into $DATA"
for n in 10 100 1000 5000; do
  for pod in gpu aaa; do
    f=$DATA/filter-full-$pod-$n.json
    [ -s "$f" ] || python3 "$GEN" --nodes "$n" --pod "$pod" --out "$f" 2>/dev/null
  done
done

echo "== in process: decode + policy + encode, against simdjson and nlohmann on the same bytes"
"$BIN/bench/inprocess_bench" "$OUT/inprocess.json" "$DATA"/filter-full-gpu-{10,100,1000,5000}.json \
  "$DATA"/filter-full-aaa-{100,5000}.json

echo "== cluster view: 5,000 nodes and 150,000 pods through the watch code; names mode in process"
[ -s "$DATA/filter-names-gpu-5000.json" ] || python3 "$GEN" --nodes 5000 --mode names --pod gpu --out "$DATA/filter-names-gpu-5000.json" 2>/dev/null
"$BIN/bench/cluster_view_bench" "$OUT/cluster_view.json" "$DATA/filter-full-gpu-5000.json" "$DATA/filter-names-gpu-5000.json" 150000

echo "== /bind against a direct POST .../binding to the same fake API server (TLS, kept alive)"
"$BIN/bench/bind_bench" 300 | tee "$OUT/bind.txt"

echo "== scheduling throughput with the kube-scheduler stand-in: 500 nodes x 500 pods, 5,000 nodes x 200 pods, both modes"
"$BIN/bench/scheduler_bench" 500 500 | tee "$OUT/scheduler-500.txt"
"$BIN/bench/scheduler_bench" 5000 200 | tee "$OUT/scheduler-5000.txt"  # full mode: ~0.35 s a pod (the driver builds 54 MB bodies)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }
rss_kb() { awk '/VmRSS/{print $2}' /proc/$1/status; }
hwm_kb() { awk '/VmHWM/{print $2}' /proc/$1/status; }

EXT_PORT=$(free_port); FLOOR_PORT=$(free_port)
"$BIN/gpu-extender" --port "$EXT_PORT" --log-level warn & EXT_PID=$!
"$BIN/bench/transport_floor" "$FLOOR_PORT" & FLOOR_PID=$!
trap 'kill $EXT_PID $FLOOR_PID 2>/dev/null || true' EXIT
wait_port "$EXT_PORT"; wait_port "$FLOOR_PORT"

echo "== peak resident memory serving the 5,000-node full-mode filter (fresh process)"
"$BIN/bench/http_bench" latency 127.0.0.1 "$EXT_PORT" /filter "$DATA/filter-full-gpu-5000.json" 3 > "$OUT/rss-probe.json"
PEAK_KB=$(hwm_kb $EXT_PID)
BODY_BYTES=$(stat -c %s "$DATA/filter-full-gpu-5000.json")
echo "{\"peak_rss_kb\": $PEAK_KB, \"body_bytes\": $BODY_BYTES}" > "$OUT/rss.json"

echo "== end to end over loopback HTTP: p50/p99 per verb and size, and the transport floor"
: > "$OUT/http.jsonl"
for n in 10 100 1000 5000; do
  body=$DATA/filter-full-gpu-$n.json
  secs=3; [ "$n" = 5000 ] && secs=8
  for verb in filter prioritize; do
    r=$("$BIN/bench/http_bench" latency 127.0.0.1 "$EXT_PORT" /$verb "$body" $secs)
    bytes=$(echo "$r" | python3 -c 'import json,sys; print(json.load(sys.stdin)["answer_bytes"])')
    floor=$("$BIN/bench/http_bench" latency 127.0.0.1 "$FLOOR_PORT" /$verb "$body" $secs "$bytes")
    echo "{\"nodes\": $n, \"verb\": \"$verb\", \"extender\": $r, \"floor\": $floor}" >> "$OUT/http.jsonl"
  done
done

echo "== throughput, 100-node filter"
: > "$OUT/throughput.jsonl"
for c in 1 8 64; do
  "$BIN/bench/http_bench" throughput 127.0.0.1 "$EXT_PORT" /filter "$DATA/filter-full-gpu-100.json" 5 "$c" >> "$OUT/throughput.jsonl"
done

echo "== soak: 100-node filter at concurrency 64 for ${SOAK_SECONDS}s, resident memory before and after"
"$BIN/bench/http_bench" throughput 127.0.0.1 "$EXT_PORT" /filter "$DATA/filter-full-gpu-100.json" 5 64 >/dev/null
RSS_BEFORE=$(rss_kb $EXT_PID)
SOAK=$("$BIN/bench/http_bench" throughput 127.0.0.1 "$EXT_PORT" /filter "$DATA/filter-full-gpu-100.json" "$SOAK_SECONDS" 64)
RSS_AFTER=$(rss_kb $EXT_PID)
echo "{\"seconds\": $SOAK_SECONDS, \"result\": $SOAK, \"rss_kb_after_warmup\": $RSS_BEFORE, \"rss_kb_after_soak\": $RSS_AFTER}" > "$OUT/soak.json"

python3 "$ROOT/bench/report.py" "$OUT"
