#!/bin/sh
# Where the extender's CPU goes while the kube-scheduler stand-in places pods: runs scheduler_bench
# (PERCENTAGE=100 unless set), records the extender it starts with perf (Debian's linux-perf) and prints
# the shares (bench/profile_shares.py). Not in run.sh or CI: perf needs the perf_event permissions of a
# root shell or kernel.perf_event_paranoid <= 1.
#
# Usage: bench/profile.sh [NODES [PODS [names|full [FREQUENCY_HZ]]]]   (default 500 500 names 2999)
# The profile stays in bench/results/profile.data (perf report -i ... for more).
set -eu
cd "$(dirname "$0")/.."
nodes=${1:-500} pods=${2:-500} mode=${3:-names} frequency=${4:-2999}
bench=build/bench/scheduler_bench
[ -x "$bench" ] || { echo "build first: cmake --build build --target scheduler_bench" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is missing: apt-get install linux-perf" >&2; exit 2; }
mkdir -p bench/results
out=bench/results/profile.data
PERCENTAGE=${PERCENTAGE:-100} "$bench" "$nodes" "$pods" "$mode" &
bench_pid=$!
extender=""
for _ in $(seq 1 500); do
  extender=$(pgrep -P "$bench_pid" gpu-extender || true)
  [ -n "$extender" ] && break
  sleep 0.01
done
[ -n "$extender" ] || { echo "the benchmark started no gpu-extender" >&2; wait "$bench_pid"; exit 1; }
perf record -q -F "$frequency" --call-graph dwarf,65528 -p "$extender" -o "$out" >/dev/null 2>&1 &
perf_pid=$!
status=0
wait "$bench_pid" || status=$?
kill -INT "$perf_pid" 2>/dev/null || true
wait "$perf_pid" 2>/dev/null || true
[ "$status" = 0 ] || { echo "scheduler_bench failed ($status)" >&2; exit "$status"; }
echo
perf script -i "$out" 2>/dev/null | python3 bench/profile_shares.py
