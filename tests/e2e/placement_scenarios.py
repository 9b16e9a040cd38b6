"""Placement by the extender's rules, on the real control plane (names and full mode): GPU model, memory and
count, aaa packing, bbb never used, the extender's reason on a pod no node fits, and what full mode does to the
scheduler's own resource scoring. As in every scenario module, each scenario deploys the extender and the second
scheduler as shipped, makes nodes and pods through the API, waits on state (never a fixed time for an outcome)
and asserts where the real kube-scheduler put things. Each returns the figures it prints: pods placed and how
long."""
import time

from objects import (AAA, BBB, GPU, ensure_namespace, expect_pending, gpu_node, make_node, node_of, placement, pod,
                     wait_pod_bound)


def placement_rules(env, mode):
    """GPU model, memory and count; bbb nodes never used; aaa packs where most is in use, then where most is."""
    ns = f"place-{mode}"
    ensure_namespace(env.api, ns)
    gpu_node(env.api, "a100", "A100", 40960, 8)
    gpu_node(env.api, "h100", "H100", 81920, 8)
    gpu_node(env.api, "t4", "T4", 16384, 4)
    gpu_node(env.api, "a100-bbb", "A100", 40960, 8, capacity={BBB: "4"})
    make_node(env.api, "aaa-busy", capacity={AAA: "5"})
    make_node(env.api, "aaa-idle", capacity={AAA: "10"})
    # 3 of aaa-busy's 5 aaa in use by a pod bound there directly (as if placed before the extender came).
    env.api.create(pod(ns, "aaa-running", {AAA: "3"}, scheduler="default-scheduler", node_name="aaa-busy"))
    env.deploy(mode)
    started = time.monotonic()

    expect = [("want-h100", {GPU: "1"}, {"gpu.nvidia.com/model": "H100"}, "h100"),
              ("want-80g", {GPU: "2"}, {"gpu.nvidia.com/memory": "81920"}, "h100"),
              ("want-a100-6", {GPU: "6"}, {"gpu.nvidia.com/model": "A100"}, "a100"),
              ("want-a100-2", {GPU: "2"}, {"gpu.nvidia.com/model": "A100"}, "a100"),
              ("want-t4-4", {GPU: "4"}, {"gpu.nvidia.com/model": "T4"}, "t4"),
              ("aaa-1", {AAA: "1"}, {}, "aaa-busy"),
              ("aaa-2", {AAA: "1"}, {}, "aaa-busy"),
              ("aaa-3", {AAA: "1"}, {}, "aaa-idle")]
    for name, requests, annotations, node in expect:
        env.api.create(pod(ns, name, requests, annotations))
        got = node_of(wait_pod_bound(env.api, ns, name))
        assert got == node, f"{mode}: {name} went to {got}, expected {node}"
    placed = len(expect)
    # a100 is full; a100-bbb has 8 free A100s but offers bbb: never used.
    expect_pending(env, ns, "want-a100-more", {GPU: "4"}, {"gpu.nvidia.com/model": "A100"}, "bbb")
    expect_pending(env, ns, "want-v100", {GPU: "1"}, {"gpu.nvidia.com/model": "V100"},
                   "does not match requested V100")
    expect_pending(env, ns, "want-100g", {GPU: "1"}, {"gpu.nvidia.com/memory": "102400"}, "102400")
    assert "a100-bbb" not in placement(env.api.pods(ns)), "a pod was placed on the bbb node"
    return {"pods placed": placed, "seconds": time.monotonic() - started}


def placement_names(env):
    return placement_rules(env, "names")


def placement_full(env):
    return placement_rules(env, "full")


def full_mode_resource_scores(env, mode):
    """kubernetes #141781: in full mode (1.34+) the scheduler scores the nodes the extender returns as empty, so
    its own NodeResourcesFit no longer steers pods off a node whose CPUs are nearly all requested. Two nodes alike
    for the extender but for one GPU in use on `busy` by a pod requesting 60 of its 64 CPUs and 480 of its 512 GiB:
    the extender prefers busy by one level (better GPU fit: 50 points at weight 5), the scheduler's least-allocated
    scoring prefers idle by ~95 (1.37's balanced allocation scores both alike; 1.34's prefers idle too). Returns where 6
    pods of 1 GPU and half a CPU went."""
    ns = f"cpu-{mode}"
    ensure_namespace(env.api, ns)
    gpu_node(env.api, "busy")
    gpu_node(env.api, "idle")
    env.api.create(pod(ns, "hog", {"cpu": "60", "memory": "480Gi", GPU: "1"}, scheduler="default-scheduler",
                       node_name="busy"))
    env.deploy(mode)
    for i in range(6):
        env.api.create(pod(ns, f"small-{i}", {"cpu": "500m", GPU: "1"}))
        wait_pod_bound(env.api, ns, f"small-{i}")
    where = placement([p for p in env.api.pods(ns) if p["metadata"]["name"].startswith("small-")])
    return {name: len(pods) for name, pods in where.items()}


def cpu_scoring(env):
    names = full_mode_resource_scores(env, "names")
    assert names.get("idle", 0) == 6, f"names mode: the scheduler's CPU scoring should keep pods on idle: {names}"
    env.reset()
    full = full_mode_resource_scores(env, "full")
    if env.minor >= 34:
        # The scheduler is blind to the 56 requested CPUs: the extender's small preference decides.
        assert full.get("busy", 0) == 6, f"full mode on 1.{env.minor}: expected #141781's behaviour, got {full}"
    return {"names mode": f"idle {names.get('idle', 0)}/6", "full mode": f"busy {full.get('busy', 0)}/6"}


SCENARIOS = [placement_names, placement_full, cpu_scoring]
