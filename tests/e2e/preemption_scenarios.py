"""Preemption through the extender's /preempt, on the real control plane: the victims kube-scheduler picks are
narrowed to the nodes where evicting them frees the GPUs the preemptor asks."""
import time

from objects import GPU, ensure_namespace, gpu_node, node_of, pod, wait_pod_bound


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


SCENARIOS = [preemption]
