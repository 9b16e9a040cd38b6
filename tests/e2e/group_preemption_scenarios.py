"""Group preemption on the real control plane (docs/pod-groups.md, "Room for a group"): Indexed Jobs made by
the real Job controller, with the extender's group annotations and a required layer-3 topology, that fit no
block get room in one block by the extender's evictions through the real Eviction API (PodDisruptionBudgets
checked by the real disruption controller), and bind whole there. There is no kubelet: a pod with a grace
period stays terminating until something confirms it, which these scenarios do as a kubelet would, once the
grace period has passed."""
import datetime
import threading
import time

import kube
from group_scenarios import LAYER, block_nodes, block_of, indexed_job
from objects import GPU, bound, ensure_namespace, pod

PRIORITIES = (("e2e-lowest", 50), ("e2e-low", 100), ("e2e-mid", 500), ("e2e-high", 1000))


def priority_classes(env):
    for name, value in PRIORITIES:
        env.api.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                        "value": value}, ok_exists=True)


def group_job(ns, name, workers, priority_class):
    job = indexed_job(ns, name, workers, 8, {"gpu.nvidia.com/group": name, "gpu.nvidia.com/group-size": str(workers),
                                             "gpu.nvidia.com/required-topology": f"{LAYER}3"})
    job["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    return job


def running(env, ns, name, node, priority_class="e2e-low", grace=0, labels=None):
    """A pod of 8 GPUs already bound to `node` (created with spec.nodeName), at `priority_class`."""
    p = pod(ns, name, {GPU: "8"}, labels=labels, node_name=node, priority_class=priority_class)
    p["spec"]["terminationGracePeriodSeconds"] = grace
    env.api.create(p)


class Kubelets:
    """What the kubelets of `ns`'s pods would do: report a bound pod Running and Ready (the Eviction API lets
    a Pending pod go whatever its PodDisruptionBudget says, so a budget protects only running pods), and
    confirm the deletion of a terminating pod once its grace period has passed."""

    def __init__(self, api, ns):
        self.api, self.ns = api, ns
        self.stopping = threading.Event()
        self.confirmed = {}  # pod name -> seconds from its deletion's start to its confirmation
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.wait(0.2):
            now = datetime.datetime.now(datetime.timezone.utc)
            for p in self.api.pods(self.ns):
                meta = p["metadata"]
                if not meta.get("deletionTimestamp"):
                    if p["spec"].get("nodeName") and p.get("status", {}).get("phase") == "Pending":
                        self.api.merge_patch(f"/api/v1/namespaces/{self.ns}/pods/{meta['name']}/status", {"status": {
                            "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
                    continue
                due = datetime.datetime.fromisoformat(meta["deletionTimestamp"].replace("Z", "+00:00"))
                if now >= due:
                    self.api.delete(f"/api/v1/namespaces/{self.ns}/pods/{meta['name']}", 0)
                    self.confirmed[meta["name"]] = meta.get("deletionGracePeriodSeconds", 0)

    def stop(self):
        self.stopping.set()
        self.thread.join()


def alive(api, ns, name):
    """The pod exists and is not terminating."""
    try:
        return not api.pod(ns, name)["metadata"].get("deletionTimestamp")
    except kube.ApiError as e:
        if e.status == 404:
            return False
        raise


def wait_whole(env, ns, job, workers, timeout=120):
    pods = kube.wait_for(f"{job}'s {workers} workers bound", lambda: (
        lambda ps: ps if len(bound(ps)) == workers else None)(env.api.pods(ns, f"job-name={job}")), timeout)
    return {block_of(p) for p in pods}


def group_preemption(env):
    """The issue's cluster: blocks nn-3a (4 nodes), nn-3b (4), nn-3c (2), 8 GPUs a node; low-priority 8-GPU pods on
    a-3, b-1 and b-2. A priority-1000 job of 4 x 8 GPUs fits no block: the extender evicts a-3's pod alone and the
    job binds whole in block a. A priority-500 job then must use block b: exactly b-1's and b-2's pods are
    evicted, none of the first job's. A priority-50 job of 3 fits nowhere and evicts nothing."""
    ns = "group-preempt"
    ensure_namespace(env.api, ns)
    priority_classes(env)
    block_nodes(env, (("a", 4), ("b", 4), ("c", 2)))
    for name, node in (("low-a3", "block-a-3"), ("low-b1", "block-b-1"), ("low-b2", "block-b-2")):
        running(env, ns, name, node)
    extender = env.deploy("names")
    kubelets = Kubelets(env.api, ns)
    try:
        started = time.monotonic()
        env.api.create(group_job(ns, "high", 4, "e2e-high"))
        assert wait_whole(env, ns, "high", 4) == {"block-a"}, "the high job is not whole in block a"
        high_seconds = time.monotonic() - started
        assert not alive(env.api, ns, "low-a3"), "a-3's pod was not evicted"
        assert alive(env.api, ns, "low-b1") and alive(env.api, ns, "low-b2"), "a pod of block b was evicted"
        events = [e for e in env.api.events_about(ns, "low-a3") if e["reason"] == "Preempted"]
        assert events and "pod group group-preempt/high" in events[0]["message"], events

        env.api.create(group_job(ns, "mid", 4, "e2e-mid"))
        assert wait_whole(env, ns, "mid", 4) == {"block-b"}, "the mid job is not whole in block b"
        assert not alive(env.api, ns, "low-b1") and not alive(env.api, ns, "low-b2"), "b-1's or b-2's pod stayed"
        high = env.api.pods(ns, "job-name=high")
        assert len(bound(high)) == 4 and not any(p["metadata"].get("deletionTimestamp") for p in high), \
            "a member of the high job was evicted"

        env.api.create(group_job(ns, "lowest", 3, "e2e-lowest"))
        kube.wait_for("the lowest job's 3 pods", lambda: len(env.api.pods(ns, "job-name=lowest")) == 3)
        time.sleep(8)  # more than a preemptor's look (every second) and its retry (5 s) for the group
        assert not bound(env.api.pods(ns, "job-name=lowest")), "a member of the lowest job was bound"
        everyone = env.api.pods(ns)
        assert not any(p["metadata"].get("deletionTimestamp") for p in everyone), "the lowest job evicted a pod"
        assert extender.metric("gpu_extender_group_preemptions_total") == 2
        assert extender.metric("gpu_extender_group_preemption_victims_total") == 3
    finally:
        kubelets.stop()
    return {"pods placed": 8, "victims": 3, "seconds to place the high job": round(high_seconds, 1)}


def group_preemption_budgets(env):
    """A victim whose PodDisruptionBudget forbids its eviction is never evicted: the job (2 x 8 GPUs, priority
    1000) takes block b instead, whose victim has a 6-second grace period; the job waits while it terminates
    (no member bound before it is gone) and then binds whole in block b."""
    ns = "group-preempt-pdb"
    ensure_namespace(env.api, ns)
    priority_classes(env)
    block_nodes(env, (("a", 2), ("b", 2)))
    # The guarded pod is the better victim by rank (priority 50 against 100): only its budget sends the job to b.
    running(env, ns, "guarded-a1", "block-a-1", priority_class="e2e-lowest", labels={"app": "guarded"})
    running(env, ns, "slow-b1", "block-b-1", grace=6)
    kubelets = Kubelets(env.api, ns)
    kube.wait_for("the pods running", lambda: all(p["status"].get("phase") == "Running" for p in env.api.pods(ns)))
    env.api.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "guarded", "namespace": ns},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}}, ok_exists=True)
    env.deploy("names")
    try:
        env.api.create(group_job(ns, "train", 2, "e2e-high"))
        kube.wait_for("slow-b1 terminating", lambda: not alive(env.api, ns, "slow-b1"), 60)
        terminating_since = time.monotonic()
        while time.monotonic() - terminating_since < 30:
            members = env.api.pods(ns, "job-name=train")
            victim_there = any(p["metadata"]["name"] == "slow-b1" for p in env.api.pods(ns))
            if victim_there:
                assert not bound(members), "a member was bound while its victim was still terminating"
            elif len(bound(members)) == 2:
                break
            time.sleep(0.2)
        assert wait_whole(env, ns, "train", 2) == {"block-b"}, "the job is not whole in block b"
        assert alive(env.api, ns, "guarded-a1"), "the pod its budget protects was evicted"
        assert kubelets.confirmed.get("slow-b1") == 6, kubelets.confirmed
    finally:
        kubelets.stop()
        env.api.delete(env.api.object_path("PodDisruptionBudget", ns, "guarded"))
    return {"pods placed": 2, "victims": 1}


SCENARIOS = [group_preemption, group_preemption_budgets]
