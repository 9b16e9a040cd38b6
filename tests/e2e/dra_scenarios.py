"""DRA on the real control plane (resource.k8s.io/v1, 1.34+): nodes whose GPUs a driver publishes as
ResourceSlices (created as API objects, the way NVIDIA's driver publishes them; no kubelet, no device plugin,
no GPU labels, no nvidia.com/gpu allocatable), the real scheduler's DynamicResources plugin allocating claims,
the resourceclaim controller and the garbage collector ending them. The extender's counts are compared with
the claims' truth, per node and device, after each step."""
import json
import time
import urllib.request

import kube
from objects import GPU, bound, ensure_namespace, gpu_node, make_node, node_of, pod, wait_bound, wait_pod_bound

DRIVER = "gpu.nvidia.com"
H100 = ("NVIDIA H100 80GB HBM3", "Hopper", "80Gi")
A100 = ("NVIDIA A100-SXM4-40GB", "Ampere", "40Gi")


def dra_node(api, name, gpu, count=8):
    """A node with no GPU of its own as the API sees it, and a ResourceSlice with `count` GPUs of `gpu`."""
    make_node(api, name)
    product, architecture, memory = gpu
    devices = [{"name": f"gpu-{i}",
                "attributes": {"type": {"string": "gpu"}, "productName": {"string": product},
                               "architecture": {"string": architecture}, "uuid": {"string": f"GPU-{name}-{i}"},
                               "index": {"int": i}, "brand": {"string": "Nvidia"}},
                "capacity": {"memory": {"value": memory}}} for i in range(count)]
    api.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-{DRIVER}"},
                "spec": {"driver": DRIVER, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                         "nodeName": name, "devices": devices}})


def device_class(api, extended_resource):
    """NVIDIA's device class; with `extended_resource` (KEP-5004, 1.36+), pods asking nvidia.com/gpu are served
    from it on nodes whose allocatable has none."""
    spec = {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}
    if extended_resource:
        spec["extendedResourceName"] = GPU
    api.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER}, "spec": spec})


def claim(namespace, name, count, product):
    selector = f'device.attributes["{DRIVER}"].productName == "{product}"'
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                "deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": count,
                "selectors": [{"cel": {"expression": selector}}]}}]}}}


def claim_template(namespace, name, count, product):
    """A ResourceClaimTemplate: each pod naming it gets its own claim of `count` GPUs of `product`."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": claim(namespace, name, count, product)["spec"]}}


def claim_pod(namespace, name, claim_name=None, template_name=None):
    """A pod asking for GPUs through its claim only: with managedResources (as shipped) the extender never
    sees it; with the dra-claims overlay's configuration it does."""
    p = pod(namespace, name, {})
    source = {"resourceClaimName": claim_name} if claim_name else {"resourceClaimTemplateName": template_name}
    p["spec"]["resourceClaims"] = [{"name": "gpus", **source}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    return p


def held_truth(api, nodes):
    """Per node, the devices of DRIVER the allocated claims hold ("pool/device"), as the API has them."""
    held = {n: set() for n in nodes}
    for c in api.get("/apis/resource.k8s.io/v1/resourceclaims")["items"]:
        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            if r["driver"] == DRIVER and r["pool"] in held:  # each node's pool is named after it
                held[r["pool"]].add(f"{r['pool']}/{r['device']}")
    return held


def held_seen(extender, nodes):
    """Per node, what the extender counts as held (its /explain's draHeldGpus fact)."""
    body = json.dumps({"Pod": pod("probe", "probe", {GPU: "1"}), "Nodes": None, "NodeNames": list(nodes)}).encode()
    request = urllib.request.Request(extender.url("/explain"), body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        explained = json.loads(answer.read())
    held = {}
    for n in explained["nodes"]:
        value = n.get("facts", {}).get("draHeldGpus", {}).get("value", "none")
        held[n["node"]] = set() if value == "none" else {item.split(" by ")[0] for item in value.split(", ")}
    return held


def agree(env, extender, nodes, when):
    """Waits until the extender's held devices equal the claims' truth on every node; returns how many."""
    def same():
        truth, seen = held_truth(env.api, nodes), held_seen(extender, nodes)
        return sum(len(v) for v in truth.values()) + 1 if truth == seen else None
    try:
        return kube.wait_for(f"the extender's DRA counts to equal the claims' {when}", same, 30) - 1
    except AssertionError:
        raise AssertionError(f"{when}: claims hold {held_truth(env.api, nodes)}, the extender counts "
                             f"{held_seen(extender, nodes)}") from None


def dra_gpus(env):
    """Claims allocated by the real scheduler count on the extender's nodes; on 1.36+ pods asking nvidia.com/gpu
    with a model annotation are served from ResourceSlices (DRA extended resources) where the extender and the
    in-tree allocator both agree, and refused by the extender where the model is wrong; counts equal the
    claims' truth after placements, deletions and an extender restart."""
    ns = "dra"
    ensure_namespace(env.api, ns)
    extended = env.minor >= 36
    nodes = ["dra-h100-0", "dra-h100-1", "dra-a100"]
    dra_node(env.api, "dra-h100-0", H100)
    dra_node(env.api, "dra-h100-1", H100)
    dra_node(env.api, "dra-a100", A100)
    gpu_node(env.api, "plugin-a100", "A100", 40960, 8)  # a device-plugin node beside them
    device_class(env.api, extended)
    extender = env.deploy("names")
    started = time.monotonic()

    # 6 H100s by claim, allocated by the scheduler alone (the extender is not asked about such pods).
    env.api.create(claim(ns, "six-h100", 6, H100[0]))
    env.api.create(claim_pod(ns, "trainer", "six-h100"))
    trainer_node = node_of(wait_pod_bound(env.api, ns, "trainer"))
    assert trainer_node.startswith("dra-h100"), f"the claim pod went to {trainer_node}"
    held = {"after the claim pod": agree(env, extender, nodes, "after the claim pod")}
    assert extender.metric("gpu_extender_dra_nodes") == 3 and extender.metric("gpu_extender_dra_gpus") == 24
    placed = 1
    if not extended:
        # The claim pod deleted: the resourceclaim controller deallocates its claim, and the extender frees it.
        env.api.delete(f"/api/v1/namespaces/{ns}/pods/trainer", 0)
        kube.wait_for("the claim to be deallocated", lambda: not any(held_truth(env.api, nodes).values()), 60)
        held["after the deletion"] = agree(env, extender, nodes, "after the deletion")
        extender.kill()
        extender.start()
        held["after a restart"] = agree(env, extender, nodes, "after an extender restart")
        return {"pods placed": placed, "held": held, "seconds": time.monotonic() - started,
                "extended resources": f"not on 1.{env.minor}"}

    # nvidia.com/gpu pods with the extender's model annotation, served from the slices. The trainer's node has
    # 2 H100s left, the other 8: only the extender's count of the claims tells them apart.
    other = "dra-h100-1" if trainer_node == "dra-h100-0" else "dra-h100-0"
    h100 = {"gpu.nvidia.com/model": "H100"}
    for name, gpus, expected in (("ext-4a", 4, other), ("ext-4b", 4, other), ("ext-2", 2, trainer_node)):
        env.api.create(pod(ns, name, {GPU: str(gpus)}, h100))
        got = node_of(wait_pod_bound(env.api, ns, name))
        assert got == expected, f"{name} ({gpus} H100) went to {got}, expected {expected}"
        placed += 1
    held["after the extended-resource pods"] = agree(env, extender, nodes, "after the extended-resource pods")
    binds = extender.metric("gpu_extender_binds_total", result="bound")
    assert binds >= 3, f"the extender bound {binds} pods: the extended-resource pods did not come through it"
    # No H100 left: the in-tree allocator would take any GPU of the class; the extender refuses the A100s.
    from scenarios import expect_pending  # noqa: PLC0415 - scenarios imports this module
    expect_pending(env, ns, "ext-1", {GPU: "1"}, h100, "does not match requested H100")
    env.api.create(pod(ns, "ext-a100", {GPU: "8"}, {"gpu.nvidia.com/model": "A100"}))
    assert node_of(wait_pod_bound(env.api, ns, "ext-a100")) in ("dra-a100", "plugin-a100")
    placed += 1
    held["after the A100 pod"] = agree(env, extender, nodes, "after the A100 pod")

    # A pod deleted: the garbage collector deletes the claim the scheduler made for it; the claim pod deleted:
    # the resourceclaim controller deallocates its claim. The extender frees both, and places ext-1 there.
    env.api.delete(f"/api/v1/namespaces/{ns}/pods/ext-4a", 0)
    env.api.delete(f"/api/v1/namespaces/{ns}/pods/trainer", 0)
    assert node_of(wait_pod_bound(env.api, ns, "ext-1", timeout=90)).startswith("dra-h100")
    placed += 1
    # 4 (ext-4a) and 6 (the trainer) freed, 1 (ext-1) taken.
    expected = held["after the A100 pod"] - 10 + 1
    def claims_now():
        return [(c["metadata"]["name"], c["metadata"].get("deletionTimestamp"), c["metadata"].get("finalizers"),
                 [r["uid"][:8] for r in c.get("status", {}).get("reservedFor", [])],
                 len(c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])))
                for c in env.api.get("/apis/resource.k8s.io/v1/resourceclaims")["items"]]
    try:
        kube.wait_for("the deleted pods' claims to free their devices",
                      lambda: sum(len(v) for v in held_truth(env.api, nodes).values()) == expected, 60)
    except AssertionError as e:
        raise AssertionError(f"{e}; claims: {claims_now()}") from None
    held["after deletions"] = agree(env, extender, nodes, "after deletions")
    # A burst: 6 one-GPU H100 pods at once (9 H100s are free), each bound through the extender while the
    # others are filtered; then the counts again.
    for i in range(6):
        env.api.create(pod(ns, f"burst-{i}", {GPU: "1"}, h100))
    for i in range(6):
        assert node_of(wait_pod_bound(env.api, ns, f"burst-{i}")).startswith("dra-h100")
    placed += 6
    held["after a burst"] = agree(env, extender, nodes, "after a burst")
    extender.kill()
    extender.start()
    held["after a restart"] = agree(env, extender, nodes, "after an extender restart")
    return {"pods placed": placed, "held": held, "seconds": time.monotonic() - started}


def dra_claim_pods(env):
    """Pods asking GPUs only through claims, with the dra-claims overlay's scheduler configuration (no
    managedResources, so they reach the extender): judged on the GPUs their claims ask, packed where most
    GPUs are held, bound by the extender; its counts equal the claims' truth after a burst."""
    ns = "dra-claims"
    ensure_namespace(env.api, ns)
    nodes = ["dra-h100-0", "dra-h100-1", "dra-a100"]
    for name, gpu in (("dra-h100-0", H100), ("dra-h100-1", H100), ("dra-a100", A100)):
        dra_node(env.api, name, gpu)
    device_class(env.api, False)
    extender = env.deploy("dra-claims")
    started = time.monotonic()
    env.api.create(claim(ns, "six-h100", 6, H100[0]))
    env.api.create(claim_pod(ns, "trainer", claim_name="six-h100"))
    trainer_node = node_of(wait_pod_bound(env.api, ns, "trainer"))
    held = {"after the claim pod": agree(env, extender, nodes, "after the claim pod")}
    # Two H100s by template: both H100 nodes can allocate them; the extender packs onto the trainer's node.
    env.api.create(claim_template(ns, "two-h100", 2, H100[0]))
    env.api.create(claim_pod(ns, "w-0", template_name="two-h100"))
    got = node_of(wait_pod_bound(env.api, ns, "w-0"))
    assert got == trainer_node, f"w-0 (2 H100 by template) went to {got}, not the fuller {trainer_node}"
    # A burst: a Job of three workers, each 2 H100s by the template (the README's example). The trainer's
    # node is full, the other holds all three (6 of its 8).
    worker = claim_pod(ns, "worker", template_name="two-h100")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": ns},
           "spec": {"completions": 3, "parallelism": 3,
                    "template": {"spec": {**worker["spec"], "restartPolicy": "Never"}}}}
    env.api.create(job)
    for p in bound(wait_bound(env.api, ns, 3, selector="job-name=train")):
        assert node_of(p).startswith("dra-h100") and node_of(p) != trainer_node, \
            f"{p['metadata']['name']} went to {node_of(p)}"
    held["after a burst"] = agree(env, extender, nodes, "after a burst")
    binds = extender.metric("gpu_extender_binds_total", result="bound")
    assert binds >= 5, f"the extender bound {binds} of the 5 claim pods: they did not come through it"
    return {"pods placed": 5, "held": held, "seconds": time.monotonic() - started}


SCENARIOS = [dra_gpus, dra_claim_pods]
