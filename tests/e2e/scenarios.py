"""What users see, on the real control plane: each scenario deploys the extender and the second scheduler as
shipped, makes nodes and pods through the API, waits on state (never a fixed time for an outcome) and asserts
where the real kube-scheduler put things. Each returns the figures it prints: pods placed and how long."""
import concurrent.futures
import time

import dra_scenarios
import kube
from objects import (AAA, BBB, GPU, bound, ensure_namespace, gpu_node, make_node, node_of, placement, pod, pod_spec,
                     replica_set, unschedulable_message, usage_by_node, wait_bound, wait_pod_bound)


def expect_pending(env, namespace, name, requests, annotations, reason_part):
    """A pod no node fits: kube-scheduler marks it Unschedulable with the extender's reason, and it stays unbound."""
    env.api.create(pod(namespace, name, requests, annotations))
    message = unschedulable_message(env.api, namespace, name)
    assert reason_part in message, f"{name}: expected {reason_part!r} in the scheduler's message {message!r}"
    events = [e for e in env.api.events_about(namespace, name) if e.get("reason") == "FailedScheduling"]
    assert any(reason_part in e.get("message", "") for e in events), \
        f"{name}: no FailedScheduling event carries {reason_part!r}: {[e.get('message') for e in events]}"
    assert not node_of(env.api.pod(namespace, name)), f"{name} was bound though no node fits it"


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


def burst(env):
    """A ReplicaSet of 100 one-GPU pods at once, the extender binding: every pod bound once, no node over its
    GPUs. 13 nodes x 8 GPUs leave 4 spare, so any double counting in the extender leaves pods Pending."""
    ns = "burst"
    ensure_namespace(env.api, ns)
    for i in range(13):
        gpu_node(env.api, f"node-{i:02d}")
    extender = env.deploy("names")
    binds_before = extender.metric("gpu_extender_binds_total")
    started = time.monotonic()
    env.api.create(replica_set(ns, "burst", 100, {GPU: "1"}))
    pods = wait_bound(env.api, ns, 100, timeout=180)
    seconds = time.monotonic() - started
    check_gpus_within_capacity(pods, 8)
    binds = extender.metric("gpu_extender_binds_total") - binds_before
    assert binds == 100, f"the extender made {binds} bind calls for 100 pods"
    return {"pods placed": 100, "seconds": seconds, "pods/s": 100 / seconds}


def check_gpus_within_capacity(pods, per_node):
    used = usage_by_node(pods, GPU)
    over = {n: u for n, u in used.items() if u > per_node}
    assert not over, f"nodes over their {per_node} GPUs: {over}"
    assert len(bound(pods)) == len({p["metadata"]["uid"] for p in bound(pods)})


def extender_restart(env):
    """The extender killed (SIGKILL) mid-burst and started again: the scheduler's retries go through once it is
    back, nothing is lost (every pod bound) and nothing double-counted (104 GPUs, 100 pods: a pod counted twice
    would leave another Pending)."""
    ns = "restart"
    ensure_namespace(env.api, ns)
    for i in range(13):
        gpu_node(env.api, f"node-{i:02d}")
    extender = env.deploy("names")
    started = time.monotonic()
    env.api.create(replica_set(ns, "restart", 100, {GPU: "1"}))
    wait_bound(env.api, ns, 30, timeout=120)
    extender.kill()
    bound_when_killed = len(bound(env.api.pods(ns)))
    extender.start()
    pods = wait_bound(env.api, ns, 100, timeout=240)
    check_gpus_within_capacity(pods, 8)
    return {"pods placed": 100, "bound when killed": bound_when_killed, "seconds": time.monotonic() - started}


def gpu_sharing(env):
    """Pods sharing GPUs by memory (gpushare's resources): each gets one GPU index, no GPU over its 16 GiB, a pod
    asking more than one GPU has stays Pending."""
    ns = "share"
    ensure_namespace(env.api, ns)
    for name in ("share-a", "share-b"):
        make_node(env.api, name, {"gpushare": "true"}, {"aliyun.com/gpu-mem": "64", "aliyun.com/gpu-count": "4"})
    env.deploy("gpu-share")
    started = time.monotonic()
    asks = [4, 8, 4, 12, 12, 6]
    for i, gib in enumerate(asks):
        env.api.create(pod(ns, f"infer-{i}", {"aliyun.com/gpu-mem": str(gib)}))
        wait_pod_bound(env.api, ns, f"infer-{i}")
    on_gpu = {}
    for p in env.api.pods(ns):
        index = p["metadata"]["annotations"].get("ALIYUN_COM_GPU_MEM_IDX")
        assert index is not None, f"{p['metadata']['name']} bound without a GPU index"
        key = (node_of(p), index)
        on_gpu[key] = on_gpu.get(key, 0) + int(p["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"])
    assert all(v <= 16 for v in on_gpu.values()), f"a GPU holds more than 16 GiB: {on_gpu}"
    # Binpack: 4 + 8 + 4 fill one GPU before another is started.
    assert 16 in on_gpu.values(), f"the first three pods did not fill one GPU: {on_gpu}"
    expect_pending(env, ns, "too-big", {"aliyun.com/gpu-mem": "20"}, {}, "20")
    return {"pods placed": len(asks), "seconds": time.monotonic() - started}


def deletion_costs(env):
    """With --deletion-costs, the real ReplicaSet controller scaling 9 placed pods down to 7 deletes the two that
    cost least: those on the emptier node (its own ranking alone would thin the node with more replicas)."""
    ns = "costs"
    ensure_namespace(env.api, ns)
    gpu_node(env.api, "dc-1")
    gpu_node(env.api, "dc-2")
    env.deploy("deletion-costs")
    started = time.monotonic()
    env.api.create(replica_set(ns, "costs", 9, {GPU: "1"}))
    pods = wait_bound(env.api, ns, 9)
    counts = {n: len(v) for n, v in placement(pods).items()}

    def cost_of(p):
        return int(p["metadata"].get("annotations", {}).get("controller.kubernetes.io/pod-deletion-cost", "-1"))

    def costs_written():
        current = env.api.pods(ns)
        return current if all(cost_of(p) >= 0 for p in current) else None
    pods = kube.wait_for("deletion costs on all 9 pods", costs_written, 60)
    cost = {p["metadata"]["name"]: cost_of(p) for p in pods}
    assert len(set(cost.values())) > 1, f"9 pods on two nodes ({counts}) should not all cost the same: {cost}"
    env.api.merge_patch(f"/apis/apps/v1/namespaces/{ns}/replicasets/costs", {"spec": {"replicas": 7}})

    def scaled():
        alive = [p for p in env.api.pods(ns) if not p["metadata"].get("deletionTimestamp")]
        return alive if len(alive) == 7 else None
    alive = {p["metadata"]["name"] for p in kube.wait_for("the ReplicaSet scaled to 7", scaled, 60)}
    gone = set(cost) - alive
    assert max(cost[n] for n in gone) <= min(cost[n] for n in alive), \
        f"scale-down deleted {sorted(gone)} though cheaper pods stayed; placement {counts}, costs {cost}"
    return {"pods placed": 9, "placement": "+".join(str(c) for c in sorted(counts.values())),
            "costs": "/".join(str(c) for c in sorted(set(cost.values()))), "seconds": time.monotonic() - started}


def indexed_job(ns, name, workers, gpus, annotations, cpus=None):
    requests = {GPU: str(gpus), **({"cpu": str(cpus)} if cpus else {})}
    template = {"metadata": {"annotations": annotations},
                "spec": {**pod_spec(requests), "restartPolicy": "Never"}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"completions": workers, "parallelism": workers, "completionMode": "Indexed",
                     "template": template}}


LAYER = "topology.k8s.aws/network-node-layer-"


def block_nodes(env, blocks, **node_options):
    """GPU nodes in layer-3 blocks under one spine: block-<b>-<i> for each (b, size) of `blocks`."""
    for block, size in blocks:
        for i in range(size):
            gpu_node(env.api, f"block-{block}-{i}", labels={f"{LAYER}1": "nn-1", f"{LAYER}2": "nn-2",
                                                             f"{LAYER}3": f"nn-3{block}"}, **node_options)


def block_of(p):
    return node_of(p).rsplit("-", 1)[0]


def groups(env):
    """An Indexed Job of 4 workers x 8 GPUs, required in one layer-3 block, lands whole in the one block with 4
    free nodes; a second such job, which no block now holds, binds nothing and says why."""
    ns = "groups"
    ensure_namespace(env.api, ns)
    layer = LAYER
    block_nodes(env, (("a", 2), ("b", 4), ("c", 3)))
    env.deploy("names")
    started = time.monotonic()
    required = {"gpu.nvidia.com/group-size": "4", "gpu.nvidia.com/required-topology": f"{layer}3"}
    env.api.create(indexed_job(ns, "llama", 4, 8, {"gpu.nvidia.com/group": "llama", **required}))
    pods = wait_bound(env.api, ns, 4, selector="job-name=llama")
    blocks = {node_of(p).rsplit("-", 1)[0] for p in pods}
    assert blocks == {"block-b"}, f"llama's workers landed in {blocks}"
    seconds = time.monotonic() - started
    env.api.create(indexed_job(ns, "gemma", 4, 8, {"gpu.nvidia.com/group": "gemma", **required}))
    gemma = kube.wait_for("gemma's 4 pods", lambda: (lambda ps: ps if len(ps) == 4 else None)(
        env.api.pods(ns, "job-name=gemma")))
    messages = [unschedulable_message(env.api, ns, p["metadata"]["name"]) for p in gemma]
    assert all(f"needs one {layer}3 domain" in m for m in messages), messages
    assert not bound(env.api.pods(ns, "job-name=gemma")), "a member of a group no block holds was bound"
    return {"pods placed": 4, "seconds": seconds}


def groups_refused_nodes(env):
    """Groups whose plan the scheduler's own filters would refuse. "bert": 4 workers x 4 GPUs x 12 CPUs, required in
    one layer-3 block, on 16-CPU 8-GPU nodes: by GPUs two fit a node, and the 2-node block b would hold the job;
    the plan counts CPU as NodeResourcesFit does, so it lands whole in block a, one worker a node. "gpt": 2
    workers x 2 GPUs with required hostname anti-affinity between them, which the extender does not read: the plan
    stacks both on one node, kube-scheduler's InterPodAntiAffinity refuses the second there, the plan moves, and
    the job lands whole in one block on two nodes. No worker is bound before its whole job has passed."""
    ns = "groups-refused"
    ensure_namespace(env.api, ns)
    block_nodes(env, (("a", 4), ("b", 2)), capacity={"cpu": "16"})
    extender = env.deploy("names")
    started = time.monotonic()
    seen_partial = []

    def placed_whole(job, size):
        def check():
            pods = env.api.pods(ns, f"job-name={job}")
            count = len(bound(pods))
            if 0 < count < size:
                seen_partial.append(count)
            return pods if count == size else None
        try:
            return kube.wait_for(f"{job}'s {size} workers bound", check, timeout=120, interval=0.1)
        except AssertionError:
            raise AssertionError(f"{job} is not placed whole after 120 s: {seen_partial[-1] if seen_partial else 0} of "
                                 f"{size} workers bound (the rest Pending)") from None

    group = {"gpu.nvidia.com/required-topology": f"{LAYER}3"}
    env.api.create(indexed_job(ns, "bert", 4, 4, {"gpu.nvidia.com/group": "bert", "gpu.nvidia.com/group-size": "4",
                                                    **group}, cpus=12))
    bert = placed_whole("bert", 4)
    nodes = sorted(node_of(p) for p in bert)
    assert {block_of(p) for p in bert} == {"block-a"} and len(set(nodes)) == 4, f"bert's workers landed on {nodes}"
    moved_for_bert = extender.metric("gpu_extender_groups_moved_total")

    gpt = indexed_job(ns, "gpt", 2, 2, {"gpu.nvidia.com/group": "gpt", "gpu.nvidia.com/group-size": "2", **group})
    gpt["spec"]["template"]["metadata"]["labels"] = {"job": "gpt"}
    gpt["spec"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"job": "gpt"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    env.api.create(gpt)
    workers = placed_whole("gpt", 2)
    nodes = sorted(node_of(p) for p in workers)
    assert len({block_of(p) for p in workers}) == 1 and len(set(nodes)) == 2, f"gpt's workers landed on {nodes}"
    moved = extender.metric("gpu_extender_groups_moved_total") - moved_for_bert
    assert moved >= 1, "gpt's plan never moved: anti-affinity was not what refused its stacked node"
    # A poll every 100 ms that saw a job part-bound would mean members bound one by one as they came (before
    # the gate, bert ended with 2 bound and 2 Pending for good).
    return {"pods placed": 6, "plans moved (bert)": int(moved_for_bert), "plans moved (gpt)": int(moved),
            "polls seeing a job part-bound": len(seen_partial), "seconds": time.monotonic() - started}


def groups_replacement(env):
    """A worker of a placed group (2 x 4 GPUs, required in one layer-3 block) is deleted and terminates slowly (no
    kubelet confirms it, as on a draining node); the Job controller replaces it at once. The replacement joins
    the group's block, though a node in another block, already half used, is where a lone pod would pack."""
    ns = "groups-replace"
    ensure_namespace(env.api, ns)
    block_nodes(env, (("a", 3), ("b", 1)))
    env.api.create(pod(ns, "busy", {GPU: "4"}, node_name="block-b-0"))
    env.deploy("names")
    started = time.monotonic()
    env.api.create(indexed_job(ns, "bert", 2, 4, {"gpu.nvidia.com/group": "bert", "gpu.nvidia.com/group-size": "2",
                                                    "gpu.nvidia.com/required-topology": f"{LAYER}3"}))
    workers = wait_bound(env.api, ns, 2, selector="job-name=bert")
    assert {block_of(p) for p in workers} == {"block-a"}, f"bert landed on {[node_of(p) for p in workers]}"
    gone = workers[0]["metadata"]["name"]
    env.api.delete(f"/api/v1/namespaces/{ns}/pods/{gone}", 30)  # terminating until a kubelet confirms: never here

    def replacement():
        pods = [p for p in env.api.pods(ns, "job-name=bert") if not p["metadata"].get("deletionTimestamp")]
        fresh = [p for p in pods if p["metadata"]["name"] != workers[1]["metadata"]["name"]]
        return fresh[0] if fresh and node_of(fresh[0]) else None
    new = kube.wait_for("the replacement worker bound", replacement, timeout=90)
    assert block_of(new) == "block-a", f"the replacement landed on {node_of(new)}, outside its group's block"
    return {"pods placed": 3, "replacement on": node_of(new), "seconds": time.monotonic() - started}


def preemption(env):
    """A higher-priority pod on a full cluster: kube-scheduler asks /preempt, the extender keeps the node whose
    victims free enough GPUs, the victims are deleted and the pod lands there."""
    ns = "preempt"
    ensure_namespace(env.api, ns)
    gpu_node(env.api, "full-a", gpus=4)
    gpu_node(env.api, "full-b", "T4", 16384, 4)
    for cls, value in (("e2e-low", 100), ("e2e-high", 1000)):
        env.api.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                        "metadata": {"name": cls}, "value": value}, ok_exists=True)
    extender = env.deploy("names")
    started = time.monotonic()
    for i in range(4):
        env.api.create(pod(ns, f"low-{i}", {GPU: "1"}, {"gpu.nvidia.com/model": "A100"}, priority_class="e2e-low"))
    for i in range(4):
        wait_pod_bound(env.api, ns, f"low-{i}")
    env.api.create(pod(ns, "high", {GPU: "2"}, {"gpu.nvidia.com/model": "A100"}, priority_class="e2e-high"))
    node = node_of(wait_pod_bound(env.api, ns, "high", timeout=90))
    assert node == "full-a", f"the preemptor landed on {node}"
    survivors = [p for p in env.api.pods(ns) if p["metadata"]["name"].startswith("low-")
                 and not p["metadata"].get("deletionTimestamp")]
    assert len(survivors) == 2, f"{4 - len(survivors)} victims for 2 GPUs: {[p['metadata']['name'] for p in survivors]}"
    assert extender.metric("gpu_extender_requests_total", verb="preempt") >= 1, "/preempt was never called"
    return {"pods placed": 5, "victims": 2, "seconds": time.monotonic() - started}


def pod_group_cycles(env):
    """Kubernetes 1.36+ with GenericWorkload and TopologyAwareWorkloadScheduling on: a PodGroup (gang of 4, one
    layer-3 block) is scheduled in pod-group cycles, each candidate placement (one block) tried with the filter
    extenders, so /filter comes several times for one pod with a subset of the nodes, and nothing binds until a
    placement is chosen. The extender judges each call on its own: the gang lands whole in the one block with
    room, and no /filter waits for a member's /bind (it comes only once the whole group is placed)."""
    if env.minor < 36:
        return {"skipped": f"pod-group cycles need 1.36+, this is 1.{env.minor}"}
    gates = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
    with env.separate_plane("pod-groups", gates, ["--runtime-config=scheduling.k8s.io/v1beta1=true"]) as gang_env:
        ns = "gang"
        ensure_namespace(gang_env.api, ns)
        key = "topology.k8s.aws/network-node-layer-3"
        for block, size in (("a", 2), ("b", 4), ("c", 3)):
            for i in range(size):
                gpu_node(gang_env.api, f"block-{block}-{i}", labels={key: f"nn-3{block}"})
        extender = gang_env.deploy("names")
        started = time.monotonic()
        gang_env.api.post(f"/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups", {
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "trainer"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 4}},
                     "schedulingConstraints": {"topology": [{"key": key}]}}})
        for i in range(4):
            # Half of them also carry the extender's own group annotations, which it leaves to the native gang.
            ours = {"gpu.nvidia.com/group": "trainer", "gpu.nvidia.com/group-size": "4",
                    "gpu.nvidia.com/required-topology": key} if i % 2 else None
            worker = pod(ns, f"worker-{i}", {GPU: "8"}, ours)
            worker["spec"]["schedulingGroup"] = {"podGroupName": "trainer"}
            gang_env.api.create(worker)
        pods = wait_bound(gang_env.api, ns, 4, timeout=120)
        blocks = {node_of(p).rsplit("-", 1)[0] for p in pods}
        assert blocks == {"block-b"}, f"the gang landed in {blocks}"
        filters = extender.metric("gpu_extender_requests_total", verb="filter")
        timeouts = extender.metric("gpu_extender_bind_wait_timeouts_total")
        waited = extender.metric("gpu_extender_bind_wait_seconds_total")
        assert filters > 4, f"{filters} /filter calls for 4 pods: no pod-group cycle tried several placements"
        assert timeouts == 0, f"{timeouts} /filter calls waited out --bind-wait-ms for a bind that could not come"
        return {"pods placed": 4, "/filter calls": int(filters), "bind wait ms": 1000 * waited,
                "seconds": time.monotonic() - started}


SCENARIOS = [placement_names, placement_full, cpu_scoring, burst, extender_restart, gpu_sharing, deletion_costs,
             groups, groups_refused_nodes, groups_replacement, preemption, pod_group_cycles, *dra_scenarios.SCENARIOS]
