#!/usr/bin/env python3
"""Load for bench/control_plane_cpu.sh, through the API server's REST API (no kubectl needed).

  control_plane_load.py nodes N   N GPU nodes (8 A100s each), made Ready and untainted, as a kubelet would
  control_plane_load.py pods N    N pods asking for one nvidia.com/gpu, for the gpu-scheduler profile

Reads the admin token and CA of the loopback control plane in $K8S_HARNESS (default /tmp/k8s).
UTILIZATION=1 gives node i a GPU utilisation of (37 i mod 100)%, as scheduler_bench does.
POST_THREADS (default 1) pods are posted by that many connections at once.
"""
import concurrent.futures
import http.client
import json
import os
import ssl
import sys

HARNESS = os.environ.get("K8S_HARNESS", "/tmp/k8s")
API_PORT = 16443
with open(f"{HARNESS}/conf/tokens.csv") as tokens:
    TOKEN = tokens.readline().split(",")[0].strip()
TLS = ssl.create_default_context(cafile=f"{HARNESS}/pki/ca.crt")
UTILIZATION = os.environ.get("UTILIZATION") == "1"


def request(connection, method, path, body, content_type="application/json"):
    headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": content_type}
    connection.request(method, path, json.dumps(body), headers)
    answer = connection.getresponse()
    data = answer.read()
    if answer.status >= 300 and answer.status != 409:  # 409: already there (a rerun)
        raise SystemExit(f"{method} {path}: {answer.status} {data[:300]!r}")


def make_node(i, connection):
    name = f"gpu-node-{i:05d}"
    annotations = {"gpu.nvidia.com/utilization": f"{(37 * i) % 100 / 100:.2f}"} if UTILIZATION else {}
    labels = {"gpu.nvidia.com/model": "A100", "gpu.nvidia.com/memory": "40960", "gpu.nvidia.com/count": "8",
              "kubernetes.io/hostname": name}
    request(connection, "POST", "/api/v1/nodes",
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels,
                                                              "annotations": annotations}})
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    request(connection, "PATCH", f"/api/v1/nodes/{name}/status",
            {"status": {"capacity": capacity, "allocatable": capacity, "conditions": [ready]}},
            "application/merge-patch+json")
    # The admission plugin taints a new node not-ready; a kubelet's controller would lift it.
    request(connection, "PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}}, "application/merge-patch+json")


def make_pod(i, connection):
    gpu = {"nvidia.com/gpu": "1"}
    request(connection, "POST", "/api/v1/namespaces/default/pods",
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"gpu-pod-{i:05d}", "namespace": "default"},
             "spec": {"schedulerName": "gpu-scheduler",
                      "containers": [{"name": "c", "image": "busybox",
                                      "resources": {"limits": gpu, "requests": gpu}}]}})


def run(make, count, threads):
    def work(ids):
        connection = http.client.HTTPSConnection("127.0.0.1", API_PORT, context=TLS)
        for i in ids:
            make(i, connection)
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, [range(k, count, threads) for k in range(threads)]))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("nodes", "pods"):
        raise SystemExit(__doc__)
    if sys.argv[1] == "nodes":
        run(make_node, int(sys.argv[2]), 8)
    else:
        run(make_pod, int(sys.argv[2]), int(os.environ.get("POST_THREADS", "1")))
