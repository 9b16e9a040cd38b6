"""Pod deletion costs (--deletion-costs, docs/deletion-costs.md), on the real control plane: the extender writes
controller.kubernetes.io/pod-deletion-cost by how full each pod's node is, and the real ReplicaSet controller,
scaling down, deletes the pods on the emptier node first."""
import time

import kube
from objects import GPU, ensure_namespace, gpu_node, placement, replica_set, wait_bound

COST = "controller.kubernetes.io/pod-deletion-cost"


def cost_of(p):
    """The pod's deletion cost, -1 while none is written."""
    return int(p["metadata"].get("annotations", {}).get(COST, "-1"))


def check_cost_order(cost, where):
    """`cost`: pod name -> deletion cost; `where`: node name -> the pods bound there (two nodes, one holding
    fewer). Every pod on the emptier node costs less than every pod on the fuller one: the order that makes a
    scale-down empty nodes (equal costs would leave the choice to the ReplicaSet's own ranking, which thins the
    fuller node)."""
    assert len(where) == 2, f"the pods should be on two nodes: {where}"
    emptier, fuller = sorted(where, key=lambda node: (len(where[node]), node))
    assert len(where[emptier]) < len(where[fuller]), f"neither node is the emptier: {where}"
    dearest_emptier = max(cost[n] for n in where[emptier])
    cheapest_fuller = min(cost[n] for n in where[fuller])
    assert dearest_emptier < cheapest_fuller, \
        (f"a pod on the emptier {emptier} ({len(where[emptier])} pods) costs {dearest_emptier}, not less than "
         f"the cheapest on the fuller {fuller} ({len(where[fuller])} pods), {cheapest_fuller}: costs "
         f"{ {n: cost[n] for n in sorted(cost)} }")


def deletion_costs(env):
    """With --deletion-costs, every pod on the emptier of two nodes costs less than every pod on the fuller, and
    the real ReplicaSet controller scaling 9 placed pods down to 7 deletes the two that cost least: those on the
    emptier node (its own ranking alone would thin the node with more replicas)."""
    ns = "costs"
    ensure_namespace(env.api, ns)
    gpu_node(env.api, "dc-1")
    gpu_node(env.api, "dc-2")
    env.deploy("deletion-costs")
    started = time.monotonic()
    env.api.create(replica_set(ns, "costs", 9, {GPU: "1"}))
    pods = wait_bound(env.api, ns, 9)
    counts = {n: len(v) for n, v in placement(pods).items()}
    refused = []

    # The writer runs every 2 s and patches a pod when its bucket changed, so a pod bound while its node was
    # still filling may carry that node's earlier (lower) cost for one round: wait for the order, and fail
    # with the last order seen if it never comes.
    def costs_in_order():
        current = env.api.pods(ns)
        if any(cost_of(p) < 0 for p in current):
            refused[:] = []
            return None
        try:
            check_cost_order({p["metadata"]["name"]: cost_of(p) for p in current}, placement(current))
        except AssertionError as error:
            refused[:] = [error]
            return None
        return current
    try:
        pods = kube.wait_for("deletion costs on all 9 pods, the emptier node's below the fuller's", costs_in_order, 60)
    except AssertionError:
        raise (refused[0] if refused else AssertionError("no deletion cost on some of the 9 pods after 60 s")) from None
    cost = {p["metadata"]["name"]: cost_of(p) for p in pods}
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


SCENARIOS = [deletion_costs]
