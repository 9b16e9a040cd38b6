"""DRA on the real control plane (resource.k8s.io/v1, 1.34+): nodes whose GPUs a driver publishes as
ResourceSlices (created as API objects, the way NVIDIA's driver publishes them; no kubelet, no device plugin,
no GPU labels, no nvidia.com/gpu allocatable), the real scheduler's DynamicResources plugin allocating claims,
the resourceclaim controller and the garbage collector ending them. The extender's counts are compared with
the claims' truth, per node and device, after each step."""
import json
import time
import urllib.request

import kube
from objects import (GPU, IMPLICIT_GPU, bound, ensure_namespace, expect_pending, gpu_node, make_node, node_of, pod,
                     wait_bound, wait_pod_bound)

DRIVER = "gpu.nvidia.com"
# (productName, architecture, memory) as NVIDIA's DRA driver publishes them: go-nvlib's architecture names, and
# the memory NVML reports (not the size the GPU is sold with).
H100 = ("NVIDIA H100 80GB HBM3", "Hopper", "81559Mi")
A100 = ("NVIDIA A100-SXM4-40GB", "Ampere", "40536Mi")
A100_80 = ("NVIDIA A100-SXM4-80GB", "Ampere", "81920Mi")
L40S = ("NVIDIA L40S", "Ada Lovelace", "46068Mi")


def whole_gpu(node, minor, gpu):
    """A GPU not in MIG mode as the driver publishes it (cmd/gpu-kubelet-plugin/deviceinfo.go): no "index"."""
    product, architecture, memory = gpu
    return {"name": f"gpu-{minor}",
            "attributes": {"type": {"string": "gpu"}, "uuid": {"string": f"GPU-{node}-{minor}"},
                           "productName": {"string": product}, "brand": {"string": "Nvidia"},
                           "architecture": {"string": architecture}, "cudaComputeCapability": {"version": "9.0.0"},
                           "driverVersion": {"version": "580.95.5"}, "cudaDriverVersion": {"version": "13.0.0"},
                           "resource.kubernetes.io/pciBusID": {"string": f"0000:{10 + minor}:00.0"}},
            "capacity": {"memory": {"value": memory}}}


def mig_devices(node, minor):
    """A GPU in MIG mode (A100 80GB, 7 x 1g.10gb): the driver publishes its MIG devices only, named
    gpu-<minor>-mig-<profile>-<profileId>-<placementStart>, tied to the parent by parentUUID and pciBusID."""
    return [{"name": f"gpu-{minor}-mig-1g10gb-19-{start}",
             "attributes": {"type": {"string": "mig"}, "uuid": {"string": f"MIG-{node}-{minor}-{start}"},
                            "parentUUID": {"string": f"GPU-{node}-{minor}"}, "profile": {"string": "1g.10gb"},
                            "productName": {"string": A100_80[0]}, "architecture": {"string": "Ampere"},
                            "resource.kubernetes.io/pciBusID": {"string": f"0000:{10 + minor}:00.0"}},
             "capacity": {"memory": {"value": "9856Mi"}, "multiprocessors": {"value": "14"}}} for start in range(7)]


def publish(api, node, devices, generation=1, suffix=""):
    api.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-{DRIVER}{suffix}"},
                "spec": {"driver": DRIVER, "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                         "nodeName": node, "devices": devices}})


def dra_node(api, name, gpu, count=8):
    """A node with no GPU of its own as the API sees it, and a ResourceSlice with `count` GPUs of `gpu`."""
    make_node(api, name)
    publish(api, name, [whole_gpu(name, i, gpu) for i in range(count)])


def device_class(api, extended_resource):
    """NVIDIA's device classes as its chart installs them (gpu.nvidia.com: whole GPUs, mig.nvidia.com: MIG
    devices); with `extended_resource` (KEP-5004, 1.36+), pods asking nvidia.com/gpu are served from the
    first on nodes whose allocatable has none."""
    for name, kind in ((DRIVER, "gpu"), ("mig.nvidia.com", "mig")):
        expression = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
        spec = {"selectors": [{"cel": {"expression": expression}}]}
        if extended_resource and kind == "gpu":
            spec["extendedResourceName"] = GPU
        api.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec})


def claim(namespace, name, count, product, selector=None, device_class_name=DRIVER):
    selector = selector or f'device.attributes["{DRIVER}"].productName == "{product}"'
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                "deviceClassName": device_class_name, "allocationMode": "ExactCount", "count": count,
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
    """Per node, the physical GPUs the allocated claims hold ("pool/gpu-<minor>": a MIG device holds its parent),
    as the API has them; results with adminAccess hold nothing (the allocator does not count them)."""
    held = {n: set() for n in nodes}
    for c in api.get("/apis/resource.k8s.io/v1/resourceclaims")["items"]:
        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            if r["driver"] == DRIVER and r["pool"] in held and not r.get("adminAccess"):  # pools named after nodes
                held[r["pool"]].add(f"{r['pool']}/{r['device'].split('-mig-')[0]}")
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
    placed = 5
    if env.minor >= 36:
        # The class's implicit extended resource (KEP-5004, on by default from 1.36), which no managedResources
        # may name (kube-scheduler refuses a *kubernetes.io/ name there): it reaches the extender only with
        # this configuration. 2 GPUs asked H100 by annotation: the in-tree allocator would take the empty
        # A100 node, the extender counts them as GPUs and keeps the pod on the H100s (2 left on one node).
        env.api.create(pod(ns, "implicit-2", {IMPLICIT_GPU: "2"}, {"gpu.nvidia.com/model": "H100"}))
        got = node_of(wait_pod_bound(env.api, ns, "implicit-2"))
        full = {node_of(p) for p in bound(wait_bound(env.api, ns, 3, selector="job-name=train"))}
        assert got in full, f"implicit-2 (2 H100 by {IMPLICIT_GPU}) went to {got}, not {full}"
        held["after the implicit-resource pod"] = agree(env, extender, nodes, "after the implicit-resource pod")
        placed += 1
    return {"pods placed": placed, "held": held, "seconds": time.monotonic() - started}


def explained_facts(extender, node):
    body = json.dumps({"Pod": pod("probe", "probe", {GPU: "1"}), "Nodes": None, "NodeNames": [node]}).encode()
    request = urllib.request.Request(extender.url("/explain"), body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return {k: v["value"] for k, v in json.loads(answer.read())["nodes"][0].get("facts", {}).items()}


def dra_driver_shapes(env):
    """Objects shaped as NVIDIA's DRA driver writes them, claim pods reaching the extender (the dra-claims
    overlay): a node of 4 whole A100s and 4 in MIG mode where seven MIG claims hold one parent and a 4-GPU
    claim pod still lands; a monitoring claim with adminAccess over a node's GPUs that holds none of them; a
    pool republished under a new generation with the old slice still listed, one GPU tainted after an XID
    error (device taints are on by default from 1.36); an L40S judged as family ada-lovelace; 80 GiB asked of
    an H100 that NVML reports as 81559 MiB. The real scheduler allocates; the extender agrees."""
    ns, admin_ns = "dra-shapes", "dra-admin"
    ensure_namespace(env.api, ns)
    env.api.create({"apiVersion": "v1", "kind": "Namespace",  # admin access is for namespaces labelled so
                    "metadata": {"name": admin_ns, "labels": {"resource.kubernetes.io/admin-access": "true"}}})
    nodes = ["mixed", "h100-m", "h100-t", "l40s"]
    make_node(env.api, "mixed")
    publish(env.api, "mixed", [whole_gpu("mixed", i, A100_80) for i in range(4)] +
            [d for i in range(4, 8) for d in mig_devices("mixed", i)])
    dra_node(env.api, "h100-m", H100)
    dra_node(env.api, "h100-t", H100)  # generation 1, still listed while generation 2 is published
    republished = [whole_gpu("h100-t", i, H100) for i in range(8)]
    taints = env.minor >= 36
    if taints:
        republished[7]["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]
    publish(env.api, "h100-t", republished, generation=2, suffix="-gen2")
    dra_node(env.api, "l40s", L40S, 1)
    device_class(env.api, False)
    extender = env.deploy("dra-claims")
    started = time.monotonic()

    def on(node):
        return f"device.attributes['{DRIVER}'].uuid.startsWith('GPU-{node}-')"

    # Seven MIG claims, all on gpu-4 of the mixed node.
    for i in range(7):
        env.api.create(claim(ns, f"mig-{i}", 1, None, f"device.attributes['{DRIVER}'].parentUUID == 'GPU-mixed-4'",
                             "mig.nvidia.com"))
        env.api.create(claim_pod(ns, f"mig-{i}", claim_name=f"mig-{i}"))
    for i in range(7):
        assert node_of(wait_pod_bound(env.api, ns, f"mig-{i}")) == "mixed"
    held = {"after the MIG claims": agree(env, extender, nodes, "after the MIG claims")}
    env.api.create(claim(ns, "four-a100", 4, A100_80[0]))
    env.api.create(claim_pod(ns, "four-a100", claim_name="four-a100"))
    assert node_of(wait_pod_bound(env.api, ns, "four-a100")) == "mixed"

    # A monitoring claim over all of h100-m's GPUs, with admin access; then a pod asking all 8 (80 GiB each).
    monitor = claim(admin_ns, "dcgm", 1, None, on("h100-m"))
    request = monitor["spec"]["devices"]["requests"][0]["exactly"]
    request.update({"allocationMode": "All", "adminAccess": True})
    del request["count"]
    env.api.create(monitor)
    env.api.create(claim_pod(admin_ns, "dcgm", claim_name="dcgm"))
    assert node_of(wait_pod_bound(env.api, admin_ns, "dcgm")) == "h100-m"
    env.api.create(claim(ns, "eight-h100", 8, None, on("h100-m")))
    eight = claim_pod(ns, "eight-h100", claim_name="eight-h100")
    eight["metadata"]["annotations"] = {"gpu.nvidia.com/memory": "80Gi", "gpu.nvidia.com/model": "H100"}
    env.api.create(eight)
    assert node_of(wait_pod_bound(env.api, ns, "eight-h100")) == "h100-m"
    held["after the admin and 8-GPU claims"] = agree(env, extender, nodes, "after the admin and 8-GPU claims")

    # The republished pool: 8 GPUs, not 16; the tainted one named unavailable; 7 free for a claim pod.
    facts = explained_facts(extender, "h100-t")
    assert len(facts["draGpus"].split(", ")) == 8, f"h100-t: {facts['draGpus']}"
    if taints:
        assert "h100-t/gpu-7" in facts["draUnavailableGpus"] and "gpu.nvidia.com/xid=79:NoSchedule" in \
            facts["draUnavailableGpus"], facts["draUnavailableGpus"]
        assert extender.metric("gpu_extender_dra_unavailable_gpus") == 3 + 1  # mixed's gpu-5..7, h100-t's gpu-7
    env.api.create(claim(ns, "seven-h100", 7, None, on("h100-t")))
    env.api.create(claim_pod(ns, "seven-h100", claim_name="seven-h100"))
    assert node_of(wait_pod_bound(env.api, ns, "seven-h100")) == "h100-t"

    # An admin drains the L40S with a DeviceTaintRule (GA, on by default, in 1.37): the extender counts it
    # unavailable as the allocator does, and the pod below waits until the rule is deleted.
    rules = env.minor >= 37
    if rules:
        env.api.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "drain-l40s"},
                        "spec": {"deviceSelector": {"driver": DRIVER, "pool": "l40s", "device": "gpu-0"},
                                 "taint": {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}}})
        kube.wait_for("the extender to count the DeviceTaintRule's taint", lambda: "example.com/maintenance=true:NoSchedule"
                      in explained_facts(extender, "l40s").get("draUnavailableGpus", ""), 30)
    # Family as GFD writes it, from go-nvlib's "Ada Lovelace".
    env.api.create(claim(ns, "l40s", 1, L40S[0]))
    ada = claim_pod(ns, "l40s", claim_name="l40s")
    ada["metadata"]["annotations"] = {"gpu.nvidia.com/family": "ada-lovelace"}
    env.api.create(ada)
    if rules:
        time.sleep(3)
        assert not env.api.get(f"/api/v1/namespaces/{ns}/pods/l40s")["spec"].get("nodeName"), "placed on a drained GPU"
        env.api.delete("/apis/resource.k8s.io/v1/devicetaintrules/drain-l40s", 0)
    assert node_of(wait_pod_bound(env.api, ns, "l40s", timeout=90)) == "l40s"
    held["at the end"] = agree(env, extender, nodes, "at the end")
    binds = extender.metric("gpu_extender_binds_total", result="bound")
    assert binds >= 12, f"the extender bound {binds} of the 12 claim pods: they did not come through it"
    return {"pods placed": 12, "held": held, "seconds": time.monotonic() - started,
            "device taints": "checked" if taints else f"not on 1.{env.minor} (DRADeviceTaints is alpha)",
            "DeviceTaintRules": "checked" if rules else f"not on 1.{env.minor} (not in resource.k8s.io/v1 before 1.37)"}


SCENARIOS = [dra_gpus, dra_claim_pods, dra_driver_shapes]
