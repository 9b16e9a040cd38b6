#!/usr/bin/env python3
"""The project's generator of kube-scheduler extender request bodies (stdlib only).

Writes, as compact JSON in Go's field order (the exact shape kube-scheduler POSTs; the extender/v1 types
carry no json tags, so the top-level keys are capitalised):

  filter, prioritize  ExtenderArgs            full:  {"Pod":..,"Nodes":{"metadata":{},"items":[..]},"NodeNames":null}
                                              names: {"Pod":..,"Nodes":null,"NodeNames":[..]}
  preempt             ExtenderPreemptionArgs  full: NodeNameToVictims with whole pods; names: NodeNameToMetaVictims
  bind                ExtenderBindingArgs     {"PodName":..,"PodNamespace":..,"PodUID":..,"Node":..}

The fleet is an EKS cluster: p4d/p5/g5/g6 GPU instances and m6i/c6i/r6i CPU ones over three zones, each
node with the labels, annotations, taints, conditions, addresses, node info and 20-50 images that
`kubectl get node -o json` shows on EKS (about 10 KB a node, so a 5,000-node body is about 50 MB, what a
real scheduler sends), EKS's network topology labels on the GPU instances that carry them, and this
project's own inputs: labels gpu.nvidia.com/model|memory|count and the extended resources
custom.resource/aaa and custom.resource/bbb. In every block of 10 consecutive nodes, 4 have GPUs, 5 offer
aaa and 1 offers bbb (tests rely on it).

Deterministic: the same arguments give the same bytes; node i depends only on (seed, i), so a 10-node run
is the first 10 nodes of a 1,000-node run, and --mode names lists exactly the nodes --mode full sends.
"""

import argparse
import hashlib
import json
import random
import sys
import uuid
from datetime import datetime, timedelta, timezone

NOW = datetime(2026, 11, 2, 9, 41, 7, tzinfo=timezone.utc)
REGION = "us-west-2"
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c"]
ACCOUNT = "581726392041"

# model, MiB per GPU, instance type, vCPU, memory GiB, GPUs, weight among GPU nodes, network layers
GPU_SHAPES = [
    ("A100", 40960, "p4d.24xlarge", 96, 1152, 8, 16, 3),
    ("A100", 81920, "p4de.24xlarge", 96, 1152, 8, 8, 3),
    ("H100", 81920, "p5.48xlarge", 192, 2048, 8, 12, 3),
    ("A10G", 24576, "g5.xlarge", 4, 16, 1, 14, 0),
    ("A10G", 24576, "g5.12xlarge", 48, 192, 4, 10, 0),
    ("A10G", 24576, "g5.48xlarge", 192, 768, 8, 6, 0),
    ("L4", 24576, "g6.2xlarge", 8, 32, 1, 12, 0),
    ("L4", 24576, "g6.24xlarge", 96, 384, 4, 8, 0),
    ("A100", 40960, "p4d.2xlarge-x2", 24, 288, 2, 8, 3),  # a 2-GPU slice shape, so 2-GPU pods fit snugly
]
CPU_SHAPES = [("m6i.4xlarge", 16, 64, 4), ("m6i.8xlarge", 32, 128, 3), ("c6i.8xlarge", 32, 64, 2),
              ("r6i.4xlarge", 16, 128, 1), ("m7i.12xlarge", 48, 192, 1)]

DAEMONSET_IMAGES = [
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni", "v1.18.3-eksbuild.1", 66_481_220),
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni-init", "v1.18.3-eksbuild.1", 61_202_390),
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-network-policy-agent", "v1.1.2-eksbuild.1", 32_741_002),
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy", "v1.30.3-minimal-eksbuild.5", 35_012_771),
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-ebs-csi-driver", "v1.33.0", 104_880_113),
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/csi-node-driver-registrar", "v2.11.1-eks-1-31-1", 20_430_554),
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/livenessprobe", "v2.13.1-eks-1-31-1", 19_664_401),
    ("public.ecr.aws/aws-observability/aws-for-fluent-bit", "2.32.2.20240820", 120_566_920),
    ("quay.io/prometheus/node-exporter", "v1.8.2", 12_567_330),
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/pause", "3.5", 298_689),
]
GPU_IMAGES = [
    ("nvcr.io/nvidia/k8s-device-plugin", "v0.16.2", 121_410_392),
    ("nvcr.io/nvidia/k8s/dcgm-exporter", "3.3.7-3.5.0-ubuntu22.04", 1_271_855_624),
    ("nvcr.io/nvidia/gpu-feature-discovery", "v0.16.2", 118_020_331),
]
APP_REPOS = [
    ("nvcr.io/nvidia/pytorch", 9_870_000_000), ("nvcr.io/nvidia/tritonserver", 7_210_000_000),
    ("nvcr.io/nvidia/nemo", 14_100_000_000), ("docker.io/vllm/vllm-openai", 5_240_000_000),
    ("public.ecr.aws/neuron/pytorch-training", 6_310_000_000),
    (f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/training/llm-pretrain", 12_400_000_000),
    (f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/serving/embedding-server", 4_120_000_000),
    (f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/apps/checkout-api", 214_000_000),
    (f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/apps/aaa-consumer", 98_000_000),
    (f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/apps/search-indexer", 402_000_000),
    ("docker.io/library/nginx", 187_000_000), ("docker.io/library/redis", 116_000_000),
    ("docker.io/istio/proxyv2", 97_000_000), ("quay.io/prometheus/prometheus", 281_000_000),
    ("docker.io/grafana/grafana", 458_000_000), ("docker.io/bitnami/kafka", 598_000_000),
    ("docker.io/datadog/agent", 1_132_000_000), ("docker.io/library/python", 151_000_000),
]


def ts(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def sorted_map(d):
    return {k: d[k] for k in sorted(d)}  # Go writes map keys sorted


def rand_uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def weighted(rng, items, at):
    return rng.choices(items, weights=[it[at] for it in items])[0]


def image(repo, tag, size):
    digest = hashlib.sha256(f"{repo}:{tag}".encode()).hexdigest()
    return {"names": [f"{repo}@sha256:{digest}", f"{repo}:{tag}"], "sizeBytes": size}


class Node:
    """Who node i is: cheap enough for names mode, bind and victims."""

    def __init__(self, seed, i):
        self.index = i
        self.rng = rng = random.Random(f"{seed}:node:{i}")
        block = random.Random(f"{seed}:block:{i // 10}")
        gpu_slots, aaa_slots, bbb_slots = (set(block.sample(range(10), k)) for k in (4, 5, 1))
        slot = i % 10
        if slot in gpu_slots:
            self.model, self.memory, self.instance, self.vcpu, self.mem_gib, self.gpus, _, self.layers = \
                weighted(rng, GPU_SHAPES, 6)
        else:
            self.instance, self.vcpu, self.mem_gib, _ = weighted(rng, CPU_SHAPES, 3)
            self.model, self.gpus, self.layers = None, 0, 0
        self.zone = ZONES[i % 3]
        self.aaa = rng.randint(1, 16) if slot in aaa_slots else 0
        self.bbb = slot in bbb_slots
        self.ip = f"10.{16 + i // 65000}.{(i // 250) % 256}.{i % 250 + 4}"
        self.name = f"ip-{self.ip.replace('.', '-')}.{REGION}.compute.internal"
        self.block = i // 40  # network layers: 40 consecutive nodes share a layer-3 block

    def fits(self, kind):
        if kind == "gpu":
            return self.model == "A100" and self.memory >= 40960 and self.gpus >= 2
        if kind == "aaa":
            return self.aaa >= 1
        return self.gpus == 0


def node_labels(n):
    labels = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": n.instance,
        "beta.kubernetes.io/os": "linux", "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "eks.amazonaws.com/nodegroup": ("gpu-" if n.gpus else "cpu-") + n.instance.split(".")[0],
        "eks.amazonaws.com/nodegroup-image": "ami-0c6b1d2e8f3a4b5c6",
        "failure-domain.beta.kubernetes.io/region": REGION, "failure-domain.beta.kubernetes.io/zone": n.zone,
        "k8s.io/cloud-provider-aws": hashlib.sha256(b"ml-prod").hexdigest()[:32],
        "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": n.instance, "topology.k8s.aws/zone-id": "usw2-az" + n.zone[-1:],
        "topology.kubernetes.io/region": REGION, "topology.kubernetes.io/zone": n.zone,
    }
    if n.gpus:
        labels.update({"gpu.nvidia.com/count": str(n.gpus), "gpu.nvidia.com/memory": str(n.memory),
                       "gpu.nvidia.com/model": n.model, "nvidia.com/gpu.present": "true"})
    for layer in range(1, n.layers + 1):
        span = {1: 400, 2: 120, 3: 40}[layer]
        labels[f"topology.k8s.aws/network-node-layer-{layer}"] = f"nn-{hashlib.sha256(f'{layer}:{n.index // span}'.encode()).hexdigest()[:17]}"
    return sorted_map(labels)


def node_managed_fields(labels, capacity, created):
    def fields(keys):
        return {f"f:{k}": {} for k in sorted(keys)}
    return [
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": ts(created),
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, **fields(labels)}},
                                                "f:spec": {"f:providerID": {}}}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": ts(NOW - timedelta(seconds=31)),
         "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": {"f:allocatable": fields(capacity), "f:capacity": fields(capacity),
                                   "f:conditions": {}, "f:images": {}, "f:nodeInfo": {}}}},
    ]


def build_node(n, managed_fields):
    rng = n.rng
    created = NOW - timedelta(seconds=rng.randint(3600, 60 * 86400))
    labels = node_labels(n)
    capacity = {"cpu": str(n.vcpu), "ephemeral-storage": "524275692Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                "memory": f"{int(n.mem_gib * 1024 * 1024 * 0.985)}Ki", "pods": "737" if n.vcpu >= 96 else "234"}
    allocatable = dict(capacity, cpu=f"{n.vcpu * 1000 - 90 - n.vcpu * 5}m",
                       memory=f"{int(n.mem_gib * 1024 * 1024 * 0.94)}Ki", **{"ephemeral-storage": "482122717103"})
    extra = {}
    if n.gpus:
        extra["nvidia.com/gpu"] = str(n.gpus)
    if n.aaa:
        extra["custom.resource/aaa"] = str(n.aaa)
    if n.bbb:
        extra["custom.resource/bbb"] = "1"
    capacity, allocatable = sorted_map({**capacity, **extra}), sorted_map({**allocatable, **extra})
    annotations = {"alpha.kubernetes.io/provided-node-ip": n.ip, "node.alpha.kubernetes.io/ttl": "0",
                   "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
    if n.gpus and rng.random() < 0.75:
        annotations["gpu.nvidia.com/utilization"] = f"{rng.randint(0, 100) / 100:.2f}"
    metadata = {"name": n.name, "uid": rand_uuid(rng), "resourceVersion": str(rng.randint(10**8, 10**9)),
                "creationTimestamp": ts(created), "labels": labels, "annotations": sorted_map(annotations)}
    if managed_fields:
        metadata["managedFields"] = node_managed_fields(labels, capacity, created)
    spec = {"providerID": f"aws:///{n.zone}/i-0{rng.getrandbits(64):016x}"}
    if n.gpus:
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    beat, up = ts(NOW - timedelta(seconds=rng.randint(3, 50))), ts(created + timedelta(seconds=rng.randint(20, 60)))
    conditions = [{"type": t, "status": s, "lastHeartbeatTime": beat, "lastTransitionTime": up, "reason": r,
                   "message": m} for t, s, r, m in [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status")]]
    images = [image(*im) for im in DAEMONSET_IMAGES + (GPU_IMAGES if n.gpus else [])]
    for repo, size in rng.sample(APP_REPOS, k=min(len(APP_REPOS), rng.randint(8, 18))):
        for _ in range(rng.randint(1, 3)):
            images.append(image(repo, f"{rng.randint(2024, 2026)}.{rng.randint(1, 12):02d}-{rng.getrandbits(28):07x}",
                                int(size * rng.uniform(0.9, 1.1))))
    images.sort(key=lambda im: -im["sizeBytes"])
    machine = f"{rng.getrandbits(128):032x}"
    status = {
        "capacity": capacity, "allocatable": allocatable, "conditions": conditions,
        "addresses": [{"type": "InternalIP", "address": n.ip}, {"type": "InternalDNS", "address": n.name},
                      {"type": "Hostname", "address": n.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"machineID": machine, "systemUUID": "ec2" + machine[3:8] + "-" + machine[8:12] + "-" + machine[12:16]
                     + "-" + machine[16:20] + "-" + machine[20:], "bootID": rand_uuid(rng),
                     "kernelVersion": "5.10.226-214.880.amzn2.x86_64", "osImage": "Amazon Linux 2",
                     "containerRuntimeVersion": "containerd://1.7.22", "kubeletVersion": "v1.30.4-eks-a737599",
                     "kubeProxyVersion": "v1.30.4-eks-a737599", "operatingSystem": "linux", "architecture": "amd64"},
        "images": images[:50],  # kubelet's nodeStatusMaxImages
    }
    return {"metadata": metadata, "spec": spec, "status": status}


POD_KINDS = {
    # name prefix, namespace, scheduler, requests, limits, annotations
    "gpu": ("trainer", "ml-team", "gpu-scheduler", {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"},
            {"memory": "64Gi", "nvidia.com/gpu": "2"}, {"gpu.nvidia.com/memory": "40960", "gpu.nvidia.com/model": "A100"}),
    "aaa": ("aaa-consumer", "default", "gpu-scheduler", {"cpu": "250m", "custom.resource/aaa": "1", "memory": "256Mi"},
            {"custom.resource/aaa": "1", "memory": "256Mi"}, {}),
    "plain": ("nginx", "default", "default-scheduler", {"cpu": "100m", "memory": "128Mi"}, {}, {}),
}


def build_pod(rng, kind, managed_fields, scheduler=None, node=None, requests=None, priority=0):
    prefix, ns, default_scheduler, req, lim, annotations = POD_KINDS[kind]
    req, lim = (requests, requests) if requests else (req, lim)
    rs = f"{rng.getrandbits(40):010x}"[:10]
    name = f"{prefix}-{rs}-{rng.getrandbits(20):05x}"
    created = NOW - timedelta(seconds=rng.randint(1, 600))
    metadata = {"name": name, "generateName": f"{prefix}-{rs}-", "namespace": ns, "uid": rand_uuid(rng),
                "resourceVersion": str(rng.randint(10**8, 10**9)), "creationTimestamp": ts(created),
                "labels": {"app": prefix, "pod-template-hash": rs}}
    if annotations:
        metadata["annotations"] = sorted_map(annotations)
    metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{prefix}-{rs}",
                                    "uid": rand_uuid(rng), "controller": True, "blockOwnerDeletion": True}]
    if managed_fields:
        metadata["managedFields"] = [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                                      "time": ts(created), "fieldsType": "FieldsV1",
                                      "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {}},
                                                   "f:spec": {"f:containers": {}}}}]
    container = {"name": prefix, "image": f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/apps/{prefix}:1.4.2",
                 "resources": {k: sorted_map(v) for k, v in (("limits", lim), ("requests", req)) if v},
                 "volumeMounts": [{"name": f"kube-api-access-{rng.getrandbits(20):05x}", "readOnly": True,
                                   "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                 "imagePullPolicy": "IfNotPresent"}
    tolerations = [{"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                   for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]
    if "nvidia.com/gpu" in req:
        tolerations.insert(0, {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
    spec = {"volumes": [{"name": container["volumeMounts"][0]["name"], "projected": {"defaultMode": 420}}],
            "containers": [container], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "serviceAccount": "default",
            "securityContext": {}, "schedulerName": scheduler or default_scheduler, "tolerations": tolerations,
            "priority": priority, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority"}
    if node:
        spec["nodeName"] = node.name
    status = {"phase": "Running" if node else "Pending", "qosClass": "Burstable"}
    if node:
        status.update({"hostIP": node.ip, "podIP": f"10.{32 + node.index // 256}.{node.index % 256}.{rng.randint(2, 250)}",
                       "startTime": ts(created)})
    return {"metadata": metadata, "spec": spec, "status": status}


def build_victims(seed, n, managed_fields):
    rng = random.Random(f"{seed}:victims:{n.index}")
    pods = []
    for _ in range(rng.randint(1, 3)):
        if n.gpus:
            count = str(rng.choice([c for c in (1, 2, 4, 8) if c <= n.gpus]))
            req = {"cpu": "4", "memory": "24Gi", "nvidia.com/gpu": count}
        else:
            req = {"cpu": "2", "memory": "4Gi"}
            if n.aaa and rng.random() < 0.5:
                req["custom.resource/aaa"] = "1"
        pods.append(build_pod(rng, "plain", managed_fields, node=n, requests=req, priority=-10))
    return pods


def request_body(args):
    kind = args.pod
    if kind == "mixed":
        kind = random.Random(f"{args.seed}:mixed").choice(["gpu", "aaa", "plain"])
    nodes = [Node(args.seed, i) for i in range(args.nodes)]
    pod = build_pod(random.Random(f"{args.seed}:pod:{kind}"), kind, args.managed_fields, args.scheduler_name)
    pod_json = dumps(pod)
    if args.verb in ("filter", "prioritize"):
        if args.mode == "full":
            items = ",".join(dumps(build_node(n, args.managed_fields)) for n in nodes)
            return f'{{"Pod":{pod_json},"Nodes":{{"metadata":{{}},"items":[{items}]}},"NodeNames":null}}'
        return f'{{"Pod":{pod_json},"Nodes":null,"NodeNames":{dumps([n.name for n in nodes])}}}'
    if args.verb == "preempt":
        by_name = sorted(nodes, key=lambda n: n.name)  # Go sorts map keys
        if args.mode == "full":
            victims = {n.name: {"Pods": build_victims(args.seed, n, args.managed_fields), "NumPDBViolations": 0}
                       for n in by_name}
            return f'{{"Pod":{pod_json},"NodeNameToVictims":{dumps(victims)},"NodeNameToMetaVictims":null}}'
        meta = {n.name: {"Pods": [{"UID": p["metadata"]["uid"]} for p in build_victims(args.seed, n, False)],
                         "NumPDBViolations": 0} for n in by_name}
        return f'{{"Pod":{pod_json},"NodeNameToVictims":null,"NodeNameToMetaVictims":{dumps(meta)}}}'
    target = random.Random(f"{args.seed}:bind").choice([n for n in nodes if n.fits(kind)] or nodes)
    return dumps({"PodName": pod["metadata"]["name"], "PodNamespace": pod["metadata"]["namespace"],
                  "PodUID": pod["metadata"]["uid"], "Node": target.name})


def main(argv=None):
    ap = argparse.ArgumentParser(description="Write a kube-scheduler extender request body (compact JSON).")
    ap.add_argument("--nodes", type=int, default=100, help="number of nodes (default 100)")
    ap.add_argument("--mode", choices=["full", "names"], default="full",
                    help="full: node objects (nodeCacheCapable: false); names: node names only")
    ap.add_argument("--pod", choices=["gpu", "aaa", "plain", "mixed"], default="gpu",
                    help="the pod scheduled; mixed picks one of the three from the seed")
    ap.add_argument("--verb", choices=["filter", "prioritize", "bind", "preempt"], default="filter")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="-", help="output file (default: standard output)")
    ap.add_argument("--managed-fields", action="store_true", help="add metadata.managedFields to nodes and pods")
    ap.add_argument("--scheduler-name", default=None,
                    help="spec.schedulerName of the pod (default: gpu-scheduler, default-scheduler for plain)")
    args = ap.parse_args(argv)
    if args.nodes < 1:
        ap.error("--nodes must be at least 1")
    data = request_body(args).encode()
    if args.out == "-":
        sys.stdout.buffer.write(data)
    else:
        with open(args.out, "wb") as f:
            f.write(data)
    print(f"verb={args.verb} mode={args.mode} pod={args.pod} nodes={args.nodes} bytes={len(data)}", file=sys.stderr)


if __name__ == "__main__":
    main()
