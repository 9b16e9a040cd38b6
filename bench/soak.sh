#!/usr/bin/env bash
# Soak the extender on loopback for SOAK_SECONDS (default 60): starts the binary, runs bench/soak.cpp
# against it with 10- and 100-node bodies, prints the verdict. The test suite runs a 10-second version.
#   bench/soak.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SECONDS_TOTAL=${SOAK_SECONDS:-60}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BUILD/gpu-extender" --port "$PORT" --log-level error --shutdown-drain-seconds 0 --read-timeout-seconds 2 &
PID=$!
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done
"$BUILD/bench/soak" 127.0.0.1 "$PORT" "$PID" "$SECONDS_TOTAL" \
  extender-config/samples/filter-gpu-full.json extender-config/samples/filter-aaa-full.json \
  tests/fixtures/kube-scheduler-v1.26/full-mode/filter-1-request.json
