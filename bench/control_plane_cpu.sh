#!/bin/bash
# The extender's CPU per placed pod under a real kube-scheduler and kube-apiserver 1.26: what issue
# figures call "the real plane". Not in run.sh or CI (it needs a control plane built from source).
#
# Usage: K8S_HARNESS_SCRIPTS=DIR bench/control_plane_cpu.sh [NODES [PODS]]   (default 500 500)
#   K8S_HARNESS_SCRIPTS  the directory of up.sh and down.sh, the loopback control plane's scripts
#   K8S_HARNESS          its binaries, certificates and kubeconfigs (default /tmp/k8s)
#   EXTENDER             the binary to measure (default build/gpu-extender); PORT its port (18890)
#   FLOOR=wire|httplib   measure a floor extender instead (build/bench/wire_floor_extender: bare sockets,
#                        the wire's message pattern alone; build/bench/floor_extender: stock cpp-httplib)
#   UTILIZATION=1        nodes report a GPU utilisation that spreads the scores (see control_plane_load.py)
#   BATCH_OTHERS=1       an experiment, never a setting: etcd, kube-apiserver and kube-scheduler made
#                        SCHED_BATCH, so that their wake-ups no longer preempt the extender's threads
#   PERF=1               also records the extender with perf (call graphs) into bench/results/control_plane.data
#
# Starts etcd and the API server (up.sh without its scheduler), creates NODES Ready 8-GPU nodes, starts
# the extender (node-cache mode: the scheduler sends names, the extender watches) and a kube-scheduler
# whose gpu-scheduler profile calls it for filter, prioritize and bind (percentageOfNodesToScore: 100),
# posts PODS one-GPU pods, waits until the extender has bound them all, and prints, over the burst:
# the extender's CPU per placed pod (on-CPU time of its threads, /proc/PID/task/*/schedstat), the
# scheduler's, their ratio, how many times the extender's threads were put on a CPU per pod, its
# voluntary and involuntary context switches per pod, minor page faults per pod, and the TCP
# connections accepted on the machine during the burst. Then stops everything (down.sh).
set -u
cd "$(dirname "$0")/.."
nodes=${1:-500} pods=${2:-500}
scripts=${K8S_HARNESS_SCRIPTS:?set K8S_HARNESS_SCRIPTS to the directory of the control plane\'s up.sh and down.sh}
harness=${K8S_HARNESS:-/tmp/k8s}
extender=$(readlink -f "${EXTENDER:-build/gpu-extender}")
port=${PORT:-18890}
work=$(mktemp -d /tmp/control-plane-cpu.XXXXXX)
[ -x "$extender" ] || { echo "no extender binary at $extender: build first" >&2; exit 2; }
[ -x "$harness/bin/kube-scheduler" ] || { echo "no kube-scheduler in $harness/bin: build the control plane" >&2; exit 2; }

stop_all() {
  [ -n "${scheduler_pid:-}" ] && kill "$scheduler_pid" 2>/dev/null
  [ -n "${extender_pid:-}" ] && kill "$extender_pid" 2>/dev/null
  wait 2>/dev/null
  (cd "$scripts" && ./down.sh >/dev/null 2>&1)
}
trap stop_all EXIT
# Piped into `head`, a closed pipe must not kill the script before its EXIT trap stops the control plane
# and the extender (a live one would hold the port the next run listens on).
trap '' PIPE
(cd "$scripts" && ./down.sh >/dev/null 2>&1; NO_SCHEDULER=1 ./up.sh >"$work/up.log" 2>&1) || { cat "$work/up.log" >&2; exit 1; }
K8S_HARNESS=$harness python3 bench/control_plane_load.py nodes "$nodes" || exit 1

cut -d, -f1 "$harness/conf/tokens.csv" | head -1 >"$work/token"
# The last run's extender may still be going away: its port must be free, or this one cannot listen.
for _ in $(seq 50); do ss -Hltn "sport = :$port" | grep -q . || break; sleep 0.2; done
case "${FLOOR:-}" in
  wire) build/bench/wire_floor_extender "$port" 127.0.0.1 16443 "$work/token" "$harness/pki/ca.crt" >"$work/extender.log" 2>&1 & ;;
  httplib) build/bench/floor_extender "$port" https://127.0.0.1:16443 "$work/token" "$harness/pki/ca.crt" >"$work/extender.log" 2>&1 & ;;
  "") "$extender" --port "$port" --kubeconfig "$harness/conf/admin.kubeconfig" >"$work/extender.log" 2>&1 & ;;
  *) echo "FLOOR is wire or httplib" >&2; exit 2 ;;
esac
extender_pid=$!
# The extender says it is ready once its view is filled; a floor has no view: listening is enough.
for _ in $(seq 100); do
  if [ -n "${FLOOR:-}" ]; then (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
  else curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; fi
  kill -0 "$extender_pid" 2>/dev/null || { echo "the extender exited:" >&2; tail -5 "$work/extender.log" >&2; exit 1; }
  sleep 0.2
done
cat >"$work/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $harness/conf/scheduler.kubeconfig
leaderElection:
  leaderElect: false
percentageOfNodesToScore: 100
profiles:
  - schedulerName: gpu-scheduler
extenders:
  - urlPrefix: http://127.0.0.1:$port
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    weight: 5
    httpTimeout: 5s
    nodeCacheCapable: true
    ignorable: false
    managedResources:
      - name: nvidia.com/gpu
        ignoredByScheduler: false
EOF
"$harness/bin/kube-scheduler" --config="$work/scheduler.yaml" --secure-port=0 --v=1 >"$work/scheduler.log" 2>&1 &
scheduler_pid=$!
sleep 5  # the scheduler's informers sync
if [ "${BATCH_OTHERS:-0}" = 1 ]; then
  for pid in $(pgrep -f "kube-apiserver|etcd|kube-scheduler"); do chrt -b -a -p 0 "$pid"; done
fi

on_cpu() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ns += $1; slices += $3} END {printf "%d %d\n", ns, slices}'; }
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {printf "%d %d\n", v, n}'; }
faults() { awk '{print $10}' /proc/"$1"/stat; }
accepted() { awk '/^Tcp:/ {n++; if (n == 2) print $7}' /proc/net/snmp; }
bound() { grep -c 'verb=bind' "$work/extender.log"; }
# CPU seconds of a whole process (utime + stime, in clock ticks), for the control plane's own share.
ticks() { awk '{print $14 + $15}' /proc/"$1"/stat 2>/dev/null || echo 0; }
apiserver_pid=$(cat "$harness/run/kube-apiserver.pid") etcd_pid=$(cat "$harness/run/etcd.pid")

read -r ext0 slices0 < <(on_cpu "$extender_pid"); read -r sched0 _ < <(on_cpu "$scheduler_pid")
read -r vol0 invol0 < <(switches "$extender_pid"); faults0=$(faults "$extender_pid"); accepted0=$(accepted)
api0=$(ticks "$apiserver_pid") etcd0=$(ticks "$etcd_pid") whole0=$(ticks "$extender_pid")
bound0=$(bound); start=$(date +%s.%N)
K8S_HARNESS=$harness python3 bench/control_plane_load.py pods "$pods" &
loader=$!
if [ "${PERF:-0}" = 1 ]; then
  mkdir -p bench/results
  perf record -q -F 2999 --call-graph dwarf,32768 -p "$extender_pid" -o bench/results/control_plane.data >/dev/null 2>&1 &
  perf_pid=$!
fi
deadline=$(( $(date +%s) + ${DEADLINE_SECONDS:-900} ))
while [ $(( $(bound) - bound0 )) -lt "$pods" ]; do
  [ "$(date +%s)" -ge "$deadline" ] && { echo "only $(( $(bound) - bound0 )) of $pods bound in time" >&2; exit 1; }
  kill -0 "$extender_pid" 2>/dev/null || { echo "the extender exited:" >&2; tail -5 "$work/extender.log" >&2; exit 1; }
  sleep 0.5
done
end=$(date +%s.%N)
read -r ext1 slices1 < <(on_cpu "$extender_pid"); read -r sched1 _ < <(on_cpu "$scheduler_pid")
read -r vol1 invol1 < <(switches "$extender_pid"); faults1=$(faults "$extender_pid"); accepted1=$(accepted)
api1=$(ticks "$apiserver_pid") etcd1=$(ticks "$etcd_pid") whole1=$(ticks "$extender_pid")
[ -n "${perf_pid:-}" ] && { kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null; }
wait "$loader"
awk -v e=$((ext1 - ext0)) -v s=$((sched1 - sched0)) -v p="$pods" -v t=$((slices1 - slices0)) -v v=$((vol1 - vol0)) \
    -v i=$((invol1 - invol0)) -v f=$((faults1 - faults0)) -v a=$((accepted1 - accepted0)) -v n="$nodes" \
    -v t0="$start" -v t1="$end" -v api=$((api1 - api0)) -v etcd=$((etcd1 - etcd0)) -v whole=$((whole1 - whole0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
  w = t1 - t0
  printf "%d nodes, %d pods bound in %.1f s: extender %.3f ms of CPU a placed pod, kube-scheduler %.2f ms (ratio %.3f)\n", n, p, w, e / p / 1e6, s / p / 1e6, e / s
  printf "  the extender put on a CPU %.2f times a pod (voluntary switches %.2f, involuntary %.2f), minor faults %.2f a pod; TCP connections accepted on the machine during the burst: %d\n", t / p, v / p, i / p, f / p, a
  printf "  kube-apiserver %.2f ms a pod, etcd %.2f ms; the extender %.2f ms (whole processes, clock ticks: coarser, but\n", api / hz / p * 1e3, etcd / hz / p * 1e3, whole / hz / p * 1e3
  printf "  threads that ended are counted; far above the first line, the extender'"'"'s threads came and went)\n"
}'
echo "  logs in $work"
