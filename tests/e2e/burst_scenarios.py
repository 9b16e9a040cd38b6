"""Bursts, on the real control plane: a ReplicaSet of 100 one-GPU pods at once, the extender binding, on nodes
with exactly 100 GPUs, with the extender left alone and killed mid-burst. With no GPU spare, a pod the extender
counts twice leaves another pod Pending (the wait for every pod bound times out), and a pod it forgets puts a
node over its GPUs."""
import time

import kube
from objects import GPU, bound, check_gpus_within_capacity, ensure_namespace, gpu_node, replica_set, wait_bound

PODS = 100


def exact_fleet(env):
    """GPU nodes holding PODS GPUs in all, as many as the burst's one-GPU pods ask: 12 of 8 GPUs and one of 4.
    Returns node name -> GPUs."""
    capacity = {f"node-{i:02d}": 8 for i in range(PODS // 8)}
    if PODS % 8:
        capacity[f"node-{PODS // 8:02d}"] = PODS % 8
    for name, gpus in capacity.items():
        gpu_node(env.api, name, gpus=gpus)
    assert sum(capacity.values()) == PODS
    return capacity


def burst(env):
    """A ReplicaSet of 100 one-GPU pods at once, the extender binding: every pod bound once, no node over its
    GPUs, one bind call a pod. The nodes have 100 GPUs in all, none spare: one double count leaves a pod Pending
    (and wait_bound times out)."""
    ns = "burst"
    ensure_namespace(env.api, ns)
    capacity = exact_fleet(env)
    extender = env.deploy("names")
    binds_before = extender.metric("gpu_extender_binds_total")
    started = time.monotonic()
    env.api.create(replica_set(ns, "burst", PODS, {GPU: "1"}))
    pods = wait_bound(env.api, ns, PODS, timeout=180)
    seconds = time.monotonic() - started
    check_gpus_within_capacity(pods, capacity)
    binds = extender.metric("gpu_extender_binds_total") - binds_before
    assert binds == PODS, f"the extender made {binds} bind calls for {PODS} pods"
    return {"pods placed": PODS, "seconds": seconds, "pods/s": PODS / seconds}


def check_killed_mid_burst(pods, expected=PODS):
    """The pods as listed just after the kill: some bound, and some (already made by the ReplicaSet) not yet, so
    the restarted extender has binds to make and GPUs already given to count. Returns how many were bound."""
    bound_when_killed = len(bound(pods))
    unbound = len(pods) - bound_when_killed
    assert 0 < bound_when_killed < expected and unbound > 0, \
        (f"the kill did not land mid-burst: {bound_when_killed} of {expected} pods bound, {unbound} of the "
         f"{len(pods)} made still unbound")
    return bound_when_killed


def extender_restart(env):
    """The extender killed (SIGKILL) mid-burst, 100 pods queued and some 20 of them bound, and started again: the
    scheduler's retries go through once it is back, nothing is lost (every pod bound) and nothing double-counted
    (100 GPUs, 100 pods: a pod counted twice would leave another Pending). The kill is checked to have landed
    mid-burst (some pods bound, some not yet), else the scenario proves nothing about a restart."""
    ns = "restart"
    ensure_namespace(env.api, ns)
    capacity = exact_fleet(env)
    started = time.monotonic()
    env.api.create(replica_set(ns, "restart", PODS, {GPU: "1"}))
    # Every pod made before the scheduler starts: kube-controller-manager makes them at its API client's 20 a
    # second (after a burst of 30), as fast as the scheduler binds them, so with the scheduler running no pod
    # waits and a kill between two binds finds every pod made already bound. Queued, they drain at some 300
    # to 500 a second, so the kill is timed on the extender's own count of binds (a poll of a few ms; listing
    # 100 pods takes tens, time for dozens more binds).
    kube.wait_for(f"the ReplicaSet's {PODS} pods", lambda: len(env.api.pods(ns)) == PODS, 60)
    extender = env.deploy("names")
    kube.wait_for("20 binds", lambda: extender.metric("gpu_extender_binds_total") >= 20, 120, interval=0.005)
    extender.kill()
    # Listed after the kill: a bind the killed extender had sent may still land, none is sent after.
    bound_when_killed = check_killed_mid_burst(env.api.pods(ns))
    extender.start()
    pods = wait_bound(env.api, ns, PODS, timeout=240)
    check_gpus_within_capacity(pods, capacity)
    return {"pods placed": PODS, "bound when killed": bound_when_killed, "seconds": time.monotonic() - started}


SCENARIOS = [burst, extender_restart]
