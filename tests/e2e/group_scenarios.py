"""The extender's groups (gpu.nvidia.com/group annotations, docs/pod-groups.md), on the real control plane, with
Indexed Jobs made by the real Job controller: placed whole in one topology domain or not at all, plans that
move when the scheduler's own filters refuse a planned node, and a replaced worker joining its group's domain."""
import time

import kube
from objects import GPU, bound, ensure_namespace, gpu_node, node_of, pod, pod_spec, unschedulable_message, wait_bound


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


SCENARIOS = [groups, groups_refused_nodes, groups_replacement]
