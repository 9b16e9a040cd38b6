"""Kubernetes' own pod groups (spec.schedulingGroup, 1.36+ with GenericWorkload and
TopologyAwareWorkloadScheduling), on a second control plane with those gates on: the scheduler's pod-group
cycles call the extender many times for one placement, and the extender judges each call on its own."""
import time

from objects import GPU, ensure_namespace, gpu_node, node_of, pod, wait_bound


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


SCENARIOS = [pod_group_cycles]


def native_group_preemption(env):
    """Kubernetes' own gang (a PodGroup of 4 x 8 GPUs, priority 1000, one layer-3 block) where no block has room:
    block b holds a lower-priority pod on one of its 4 nodes. The scheduler's pod-group preemption (GenericWorkload)
    decides for native gangs; the extender never evicts for them (its group preemption is for its own groups),
    and the gang is never bound split. What the scheduler does is printed, not asserted: on 1.37.2 its dry run
    calls /filter without saying which pods it removed, the extender's view still counts low-b1 on block-b-1,
    the fourth member is refused there, and nothing is evicted (docs/pod-groups.md, "Native PodGroups")."""
    if env.minor < 36:
        return {"skipped": f"pod-group cycles need 1.36+, this is 1.{env.minor}"}
    gates = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
    with env.separate_plane("pod-groups", gates, ["--runtime-config=scheduling.k8s.io/v1beta1=true"]) as gang_env:
        ns = "gang-preempt"
        ensure_namespace(gang_env.api, ns)
        key = "topology.k8s.aws/network-node-layer-3"
        for block, size in (("a", 2), ("b", 4)):
            for i in range(size):
                gpu_node(gang_env.api, f"block-{block}-{i}", labels={key: f"nn-3{block}"})
        for cls, value in (("e2e-low", 100), ("e2e-high", 1000)):
            gang_env.api.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                 "metadata": {"name": cls}, "value": value}, ok_exists=True)
        gang_env.api.create(pod(ns, "low-b1", {GPU: "8"}, node_name="block-b-1", priority_class="e2e-low"))
        extender = gang_env.deploy("names")
        gang_env.api.post(f"/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups", {
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "trainer"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}, "priorityClassName": "e2e-high",
                     "schedulingConstraints": {"topology": [{"key": key}]}}})
        for i in range(4):
            worker = pod(ns, f"worker-{i}", {GPU: "8"}, priority_class="e2e-high")
            worker["spec"]["schedulingGroup"] = {"podGroupName": "trainer"}
            gang_env.api.create(worker)
        deadline = time.monotonic() + 15  # a gang the scheduler places binds within a second or two here
        bound_count = 0
        while time.monotonic() < deadline:
            workers = [p for p in gang_env.api.pods(ns) if p["metadata"]["name"].startswith("worker-")]
            bound_count = sum(1 for p in workers if p["spec"].get("nodeName"))
            if bound_count == 4:
                break
            time.sleep(0.5)
        low = [p for p in gang_env.api.pods(ns) if p["metadata"]["name"] == "low-b1"]
        evicted = not low or bool(low[0]["metadata"].get("deletionTimestamp"))
        ours = extender.metric("gpu_extender_group_preemption_victims_total")
        assert ours == 0, f"the extender evicted {ours} pod(s) for a native gang"
        assert bound_count in (0, 4), f"the native gang was bound split: {bound_count} of 4"
        return {"workers bound": bound_count, "low-b1 evicted by the scheduler": evicted, "extender victims": int(ours)}


SCENARIOS.append(native_group_preemption)
