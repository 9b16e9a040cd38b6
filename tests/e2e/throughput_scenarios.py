"""Throughput on the real scheduler: how fast pods are placed with no extender, with the wire floor (an extender
that judges nothing: bench/wire_floor_extender) and with the real extender, each round in the same run, so that
ours / floor says what the extender itself costs (issue 55). CPU per placed pod is the on-CPU time of the extender's
threads over the burst (/proc/PID/task/*/schedstat), as bench/control_plane_cpu.sh reads it."""
import concurrent.futures
import glob
import os
import re
import signal
import socket
import statistics
import subprocess

import deployment
import kube
import plane
import yaml
from objects import GPU, check_gpus_within_capacity, ensure_namespace, gpu_node, pod, wait_bound

# E2E_THROUGHPUT_NODES=5000 (and _PODS) for issue 55's large cluster, outside CI.
NODES = int(os.environ.get("E2E_THROUGHPUT_NODES", "500"))
PODS = int(os.environ.get("E2E_THROUGHPUT_PODS", "500"))
# Every node is filtered and scored (kube-scheduler's default stops at a share of a large cluster's feasible
# nodes), so that the extender is sent all 500 names a pod, as issue 55 measured.
# No client-side limit: neither the scheduler's token bucket nor the extender hides the other (issue 55's runs).
UNTHROTTLED = {"qps": -1, "burst": 100000}


def bind_times(log_path, offset):
    """When kube-scheduler logged each pod bound ("Successfully bound pod to node", by its own binder or the
    extender's /bind), from byte `offset` of its log on: seconds of the day, microseconds."""
    with open(log_path) as log:
        log.seek(offset)
        stamps = re.findall(r"^I\d{4} (\d\d):(\d\d):(\d\d\.\d+) .*Successfully bound pod to node", log.read(), re.M)
    return sorted(int(h) * 3600 + int(m) * 60 + float(sec) for h, m, sec in stamps)


def on_cpu_seconds(pid):
    """On-CPU time of every live thread of process `pid` (the first field of each thread's schedstat)."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended while read
    return total / 1e9


class FloorExtender:
    """bench/wire_floor_extender on the port a real extender would use: receives, passes every node, scores none,
    binds over one kept-alive TLS connection with the extender's service account token."""

    def __init__(self, control_plane, extender_binary, kubeconfig):
        binary = os.path.join(os.path.dirname(os.path.abspath(extender_binary)), "bench", "wire_floor_extender")
        assert os.access(binary, os.X_OK), f"no floor extender at {binary}: build the bench targets"
        with open(kubeconfig) as f:
            token = yaml.safe_load(f)["users"][0]["user"]["token"]
        token_file = os.path.join(control_plane.work, "floor-token")
        with open(token_file, "w") as f:
            f.write(token)
        self.control_plane = control_plane
        self.port = plane.free_port()
        self.process = control_plane.start("wire-floor-extender", [
            binary, str(self.port), "127.0.0.1", str(control_plane.api_port), token_file, control_plane.ca_file])
        plane.wait_healthy(self.process, "wire floor extender", lambda: self._listening(), 30)

    def _listening(self):
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self):
        self.process.stop()
        if self.process in self.control_plane.processes:
            self.control_plane.processes.remove(self.process)


def place_burst(env, k, label, client, extender_kind):
    """PODS one-GPU pods made first, then the extender (or the floor, or none) and the scheduler started: pods/s
    between the first bind and the last, and the extender's CPU seconds per placed pod (None without one)."""
    ns = "throughput"
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: env.api.create(pod(ns, f"p{k}-{i:04d}", {GPU: "1"})), range(PODS)))
    log_offset = env.log_size("kube-scheduler")
    kubeconfigs = deployment.install(env.plane, env.repo, "names")
    if extender_kind == "floor":
        env.extender = FloorExtender(env.plane, env.extender_binary, kubeconfigs["gpu-extender"])
    else:
        env.extender = deployment.Extender(env.plane, env.repo, env.extender_binary, kubeconfigs["gpu-extender"], "names")
    pid = env.extender.process.popen.pid
    cpu_before = on_cpu_seconds(pid)
    perf = None
    if os.environ.get("E2E_THROUGHPUT_PERF") and extender_kind == "extender" and client is UNTHROTTLED:
        # Where the extender's time goes over the burst (bench/profile_shares.py reads `perf script` of it).
        perf = subprocess.Popen(["perf", "record", "-q", "-F", "1999", "--call-graph", "dwarf,32768", "-p", str(pid),
                                 "-o", os.environ["E2E_THROUGHPUT_PERF"] + f".{k}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env.scheduler = deployment.Scheduler(env.plane, env.repo, "names", env.extender, kubeconfigs["gpu-scheduler"],
                                         client, with_extender=extender_kind is not None,
                                         overrides={"percentageOfNodesToScore": 100})
    pods = wait_bound(env.api, ns, PODS, timeout=300)
    cpu = on_cpu_seconds(pid) - cpu_before
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait()
    check_gpus_within_capacity(pods, 8)
    # The scheduler logs a bind after the API answered it, so the last lines may come just after the pods show
    # bound: wait a little for them.
    logged = kube.wait_for(f"{label}: {PODS} binds in kube-scheduler's log",
                           lambda: len(bind_times(env.scheduler.process.log_path, log_offset)) >= PODS, 15)
    times = bind_times(env.scheduler.process.log_path, log_offset)
    assert logged and len(times) == PODS, f"{label}: {len(times)} binds logged for {PODS} pods"
    if extender_kind == "extender" and os.environ.get("E2E_THROUGHPUT_VERBOSE"):
        print(f"  {label}: bind waits {env.extender.metric('gpu_extender_bind_waits_total'):.0f}, "
              f"{1000 * env.extender.metric('gpu_extender_bind_wait_seconds_total'):.1f} ms in all", flush=True)
    env.reset(keep_nodes=True)
    return (PODS - 1) / (times[-1] - times[0]), (cpu / PODS if extender_kind is not None else None)


def throughput(env):
    """PODS (500) one-GPU pods waiting when the scheduler starts, on NODES (500) 8-GPU nodes (names mode): pods placed a second
    between the first bind and the last, for the scheduler with no extender, with the wire floor and with the
    extender, unthrottled (E2E_THROUGHPUT_RUNS pairs of floor and extender rounds, interleaved; medians), and with
    the extender under the shipped client limits (qps 200, burst 400) and kube-scheduler's defaults (qps 50,
    burst 100)."""
    ensure_namespace(env.api, "throughput")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: gpu_node(env.api, f"node-{i:04d}"), range(NODES)))
    runs = int(os.environ.get("E2E_THROUGHPUT_RUNS", "1"))
    k = 0
    figures = {}

    def burst(label, client, kind):
        nonlocal k
        k += 1
        return place_burst(env, k, label, client, kind)

    figures["pods/s (no extender)"], _ = burst("no extender", None, None)
    floor_rate, floor_cpu, ours_rate, ours_cpu = [], [], [], []
    for _ in range(runs):
        rate, cpu = burst("wire floor", UNTHROTTLED, "floor")
        floor_rate.append(rate)
        floor_cpu.append(cpu)
        rate, cpu = burst("extender, unthrottled", UNTHROTTLED, "extender")
        ours_rate.append(rate)
        ours_cpu.append(cpu)
    figures["pods/s (wire floor)"] = statistics.median(floor_rate)
    figures["pods/s (extender, unthrottled)"] = statistics.median(ours_rate)
    figures["pods/s (extender, shipped limits)"], _ = burst("extender, shipped limits", None, "extender")
    figures["pods/s (extender, default limits)"], _ = burst("extender, default limits", {}, "extender")
    ratios = [o / f for o, f in zip(ours_rate, floor_rate)]
    cpu_ratios = [o / f for o, f in zip(ours_cpu, floor_cpu)]
    return {"pods placed": PODS * (2 + runs),
            **figures,
            "extender / floor": f"{statistics.median(ratios):.2f}" + (f" {[round(r, 2) for r in ratios]}" if runs > 1 else ""),
            "CPU ms per pod (floor)": f"{1000 * statistics.median(floor_cpu):.3f}",
            "CPU ms per pod (extender)": f"{1000 * statistics.median(ours_cpu):.3f}",
            "CPU extender / floor": f"{statistics.median(cpu_ratios):.2f}",
            "extender / no extender": f"{figures['pods/s (extender, shipped limits)'] / figures['pods/s (no extender)']:.2f}"}


SCENARIOS = [throughput]
