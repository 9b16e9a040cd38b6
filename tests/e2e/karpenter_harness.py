"""Real Karpenter (its kwok provider: tests/e2e/karpenter/build.sh) on the e2e control plane: its CRDs, a
KWOKNodeClass, a GPU NodePool over the instance types of tests/e2e/karpenter/instance_types.json (two 8-GPU
types with Karpenter's AWS GPU labels, the A100 one cheaper), the controller itself, and what a kubelet would
do for the nodes it launches (no kubelet runs: a launched node is marked Ready and its not-ready taint lifted).
Karpenter's own registration removes its unregistered taint; the NodePool's GPU taint stays."""
import glob
import os
import threading
import time

import yaml

import kube
import plane

HERE = os.path.dirname(os.path.abspath(__file__))
NODEPOOL = "gpu"


def install_crds(api, module_dir):
    files = sorted(glob.glob(os.path.join(module_dir, "pkg", "apis", "crds", "*.yaml")) +
                   glob.glob(os.path.join(module_dir, "kwok", "apis", "crds", "*.yaml")))
    names = []
    for path in files:
        with open(path) as f:
            for crd in yaml.safe_load_all(f):
                if crd:
                    api.create(crd, ok_exists=True)
                    names.append(crd["metadata"]["name"])

    def established():
        for name in names:
            crd = api.get(api.object_path("CustomResourceDefinition", None, name))
            conditions = (crd.get("status") or {}).get("conditions") or []  # null until the API server sets them
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True
    kube.wait_for("Karpenter's CRDs established", established, 30)


class Karpenter:
    def __init__(self, env, binary, module_dir, disruption=None, ready_every=0.0):
        """`ready_every`: seconds between two launched nodes turning Ready (0: each as soon as it is seen), as
        the kubelets of nodes launched together come up apart."""
        self.env, self.api = env, env.api
        self.ready_every = ready_every
        install_crds(self.api, module_dir)
        self.api.create({"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass",
                         "metadata": {"name": "default"}}, ok_exists=True)
        self.api.create({
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": NODEPOOL},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
                # As the design documents' GPU NodePool: only pods tolerating it land there.
                "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                "expireAfter": "Never"}},
                "disruption": disruption or {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}}})
        environment = dict(os.environ, KUBECONFIG=env.plane.admin_kubeconfig, DISABLE_LEADER_ELECTION="true",
                           INSTANCE_TYPES_FILE_PATH=os.path.join(HERE, "karpenter", "instance_types.json"),
                           METRICS_PORT=str(plane.free_port()), HEALTH_PROBE_PORT=str(plane.free_port()),
                           BATCH_IDLE_DURATION="1s", BATCH_MAX_DURATION="3s", LOG_LEVEL="info",
                           SYSTEM_NAMESPACE="kube-system")
        self.process = env.plane.start("karpenter", [binary], environment)
        self.stopping = False
        self.kubelet = threading.Thread(target=self._act_as_kubelets, daemon=True)
        self.kubelet.start()

    def _act_as_kubelets(self):
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        done = set()
        last_ready = 0.0
        while not self.stopping:
            try:
                for node in self.launched():
                    name = node["metadata"]["name"]
                    if name in done:
                        continue
                    if time.monotonic() - last_ready < self.ready_every:
                        break  # the next node's kubelet is not up yet
                    capacity = node["status"].get("capacity", {})
                    self.api.merge_patch(f"/api/v1/nodes/{name}/status", {"status": {
                        "conditions": [ready], "allocatable": node["status"].get("allocatable", capacity)}})
                    taints = [t for t in node["spec"].get("taints", []) if t["key"] != "node.kubernetes.io/not-ready"]
                    self.api.merge_patch(f"/api/v1/nodes/{name}", {"spec": {"taints": taints or None}})
                    done.add(name)
                    last_ready = time.monotonic()
            except kube.ApiError:
                pass  # a node deleted meanwhile
            time.sleep(0.2)

    def launched(self):
        """The nodes Karpenter has launched (its NodePool's label)."""
        return self.api.get("/api/v1/nodes", labelSelector=f"karpenter.sh/nodepool={NODEPOOL}")["items"]

    def stop(self):
        """Stops the controller and lets go of what it made (no controller is left to run its finalizers)."""
        self.stopping = True
        self.kubelet.join()
        self.process.stop()
        if self.process in self.env.plane.processes:
            self.env.plane.processes.remove(self.process)
        for kind in ("NodeClaim", "NodePool", "KWOKNodeClass"):
            for obj in self.api.get(self.api.object_path(kind))["items"]:
                path = self.api.object_path(kind, None, obj["metadata"]["name"])
                self.api.merge_patch(path, {"metadata": {"finalizers": None}})
                self.api.delete(path)
        for node in self.launched():
            path = f"/api/v1/nodes/{node['metadata']['name']}"
            self.api.merge_patch(path, {"metadata": {"finalizers": None}})
            self.api.delete(path)
