"""Nodes and pods for the end-to-end scenarios. There is no kubelet: a node is an API object whose status the
suite writes as a kubelet would (capacity, allocatable, Ready) and whose not-ready taint it lifts; a pod never
runs, and a bound pod is one with spec.nodeName, which is all a scheduler sees. Also the checks several
scenario modules share: a pod that stays Pending with the extender's reason, no node over its GPUs."""
import concurrent.futures

import kube

GPU = "nvidia.com/gpu"
# DRA's implicit extended resource of NVIDIA's GPU device class (KEP-5004, 1.36+).
IMPLICIT_GPU = "deviceclass.resource.kubernetes.io/gpu.nvidia.com"
AAA = "custom.resource/aaa"
BBB = "custom.resource/bbb"


def make_node(api, name, labels=None, capacity=None, annotations=None):
    labels = dict(labels or {}, **{"kubernetes.io/hostname": name})
    api.create({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels, "annotations": annotations or {}}})
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", **(capacity or {})}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    api.merge_patch(f"/api/v1/nodes/{name}/status",
                    {"status": {"capacity": capacity, "allocatable": capacity, "conditions": [ready]}})
    # The TaintNodesByCondition admission plugin taints a new node not-ready; the node lifecycle controller
    # would lift it once the kubelet reports Ready.
    api.merge_patch(f"/api/v1/nodes/{name}", {"spec": {"taints": None}})


def gpu_node(api, name, model="A100", memory_mib=40960, gpus=8, labels=None, capacity=None, annotations=None):
    labels = {"gpu.nvidia.com/model": model, "gpu.nvidia.com/memory": str(memory_mib),
              "gpu.nvidia.com/count": str(gpus), **(labels or {})}
    make_node(api, name, labels, {GPU: str(gpus), **(capacity or {})}, annotations)


def pod_spec(requests, scheduler="gpu-scheduler", node_name=None, priority_class=None):
    spec = {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "registry.example.com/app:1",
                            "resources": {"requests": dict(requests), "limits": dict(requests)}}]}
    # Extended resources must have limits equal to requests; cpu/memory limits would only cap, so keep them.
    if node_name:
        spec["nodeName"] = node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    return spec


def pod(namespace, name, requests, annotations=None, labels=None, **spec_options):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {},
                         "labels": labels or {}},
            "spec": pod_spec(requests, **spec_options)}


def replica_set(namespace, name, replicas, requests, annotations=None):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels, "annotations": annotations or {}},
                                  "spec": pod_spec(requests)}}}


def ensure_namespace(api, name):
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, ok_exists=True)
    # The ServiceAccount admission plugin is off (no token controller runs); pods name no account.


def node_of(p):
    return p["spec"].get("nodeName") or None


def bound(pods):
    return [p for p in pods if node_of(p)]


def placement(pods):
    """node name -> the pods bound there (names)."""
    where = {}
    for p in bound(pods):
        where.setdefault(node_of(p), []).append(p["metadata"]["name"])
    return where


def requested(p, resource):
    total = 0
    for c in p["spec"]["containers"]:
        value = c.get("resources", {}).get("limits", {}).get(resource) or \
            c.get("resources", {}).get("requests", {}).get(resource) or "0"
        total += int(value)
    return total


def usage_by_node(pods, resource):
    used = {}
    for p in bound(pods):
        used[node_of(p)] = used.get(node_of(p), 0) + requested(p, resource)
    return used


def wait_bound(api, namespace, count, timeout=120, selector=None):
    """Waits until `count` pods of the namespace are bound; returns all its pods."""
    def enough():
        pods = api.pods(namespace, selector)
        return pods if len(bound(pods)) >= count else None
    return kube.wait_for(f"{count} bound pods in {namespace}", enough, timeout)


def wait_pod_bound(api, namespace, name, timeout=60):
    """Waits until one pod is bound; returns it."""
    def bound_pod():
        p = api.pod(namespace, name)
        return p if node_of(p) else None
    return kube.wait_for(f"{namespace}/{name} bound", bound_pod, timeout)


def unschedulable_message(api, namespace, name, timeout=60):
    """The PodScheduled=False message kube-scheduler wrote on a pod it could not place."""
    def message():
        conditions = api.pod(namespace, name).get("status", {}).get("conditions", [])
        for c in conditions:
            if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
                return c.get("message", "")
        return None
    return kube.wait_for(f"{namespace}/{name} marked Unschedulable", message, timeout)


def expect_pending(env, namespace, name, requests, annotations, reason_part):
    """A pod no node fits: kube-scheduler marks it Unschedulable with the extender's reason, and it stays unbound."""
    env.api.create(pod(namespace, name, requests, annotations))
    message = unschedulable_message(env.api, namespace, name)
    assert reason_part in message, f"{name}: expected {reason_part!r} in the scheduler's message {message!r}"
    # kube-scheduler records the event through its asynchronous broadcaster, after the status patch that
    # carries the same message: waited for, not read once (seen missing once on 1.37.2 right after the
    # condition showed).
    def carried():
        events = [e for e in env.api.events_about(namespace, name) if e.get("reason") == "FailedScheduling"]
        return any(reason_part in e.get("message", "") for e in events)
    kube.wait_for(f"{name}: a FailedScheduling event carrying {reason_part!r}", carried, timeout=15)
    assert not node_of(env.api.pod(namespace, name)), f"{name} was bound though no node fits it"


def check_gpus_within_capacity(pods, capacity):
    """No node holds more GPUs than it has (`capacity`: the GPUs of every node, or node name -> its GPUs) and
    no pod is counted twice."""
    used = usage_by_node(pods, GPU)
    has = capacity.get if isinstance(capacity, dict) else lambda _node: capacity
    over = {n: f"{u} of {has(n)}" for n, u in used.items() if has(n) is None or u > has(n)}
    assert not over, f"nodes over their GPUs: {over}"
    assert len(bound(pods)) == len({p["metadata"]["uid"] for p in bound(pods)})


def delete_all(api, namespaces, keep_nodes=False):
    """Removes what a scenario made: its controllers, pods (at once: no kubelet will confirm), DRA claims,
    and every node with its ResourceSlices, and every DeviceClass."""
    for namespace in namespaces:
        for kind in ("ReplicaSet", "Job"):
            path = api.object_path(kind, namespace)
            for obj in api.get(path)["items"]:
                api.call("DELETE", f"{path}/{obj['metadata']['name']}",
                         {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
                         ok_statuses=(404,))
        pods = api.pods(namespace)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda p: api.delete(f"/api/v1/namespaces/{namespace}/pods/{p['metadata']['name']}", 0),
                          pods))
        for kind in ("ResourceClaim", "ResourceClaimTemplate"):
            api.delete(api.object_path(kind, namespace))  # a collection: every one of the namespace
    if not keep_nodes:
        for node in api.nodes():
            api.delete(f"/api/v1/nodes/{node['metadata']['name']}")
        for kind in ("ResourceSlice", "DeviceClass"):
            api.delete(api.object_path(kind))
