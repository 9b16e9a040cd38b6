"""gpu-extender deployed on the real control plane as the chart deploys it, minus the pods: the namespace,
service accounts and RBAC are created from the manifests rendered from the chart (manifests/gpu-extender.yaml,
or manifests/examples/NAME.yaml for a documented combination of values); the extender and the second scheduler
run as their service accounts (tokens from the TokenRequest API), so a missing permission in the chart fails
here as it would on a cluster. The extender takes the rendered Deployment's args and the scheduler the rendered
ConfigMap's KubeSchedulerConfiguration, changed only where a loopback run must differ: addresses, ports and
the scheduler's kubeconfig. (helm_scenarios.py installs the chart itself with real Helm.)"""
import copy
import os
import urllib.request

import yaml

import kube
import plane

NAMESPACE = "gpu-extender"
SCHEDULER_NAME = "gpu-scheduler"
# The rendered file of each way the suite deploys (scripts/render-manifests.sh writes them from the chart).
RENDERED = {
    "names": "manifests/gpu-extender.yaml",
    "full": "manifests/examples/full-mode-groups.yaml",
    "gpu-share": "manifests/examples/gpu-share.yaml",
    "deletion-costs": "manifests/examples/deletion-costs.yaml",
    "dra-claims": "manifests/examples/dra-claims.yaml",
}
RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def load_documents(repo, relative):
    with open(os.path.join(repo, relative)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def rendered(repo, mode, kind, name):
    """One object of the rendered file of `mode`."""
    [found] = [d for d in load_documents(repo, RENDERED[mode]) if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def install(control_plane, repo, mode):
    """Creates the rendered namespace, service accounts and RBAC of `mode`, replacing what an earlier scenario
    made (a ClusterRole differs between modes: GPU sharing and deletion costs patch pods); returns the two
    kubeconfigs."""
    for doc in load_documents(repo, RENDERED[mode]):
        if doc["kind"] not in RBAC_KINDS:
            continue
        answer = control_plane.kube.create(doc, ok_exists=True)
        if not (answer and answer.get("kind") == "Status" and answer.get("code") == 409) or doc["kind"] == "Namespace":
            continue
        path = control_plane.kube.object_path(doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])
        control_plane.kube.call("PUT", path, doc)  # as kubectl apply would: this mode's rules
    configs = {}
    for account in ("gpu-extender", "gpu-scheduler"):
        token = control_plane.kube.service_account_token(NAMESPACE, account)
        path = os.path.join(control_plane.work, f"{account}.kubeconfig")
        plane.write_kubeconfig(path, control_plane.api_port, control_plane.ca_file,
                               f"system:serviceaccount:{NAMESPACE}:{account}", token)
        configs[account] = path
    return configs


def loopback_scheduler_config(repo, mode, extender_port, kubeconfig, client_connection=None, with_extender=True,
                              overrides=None):
    """The rendered configuration of `mode`, pointed at the extender on loopback and given a kubeconfig;
    `client_connection`, when given, replaces the rendered client settings (qps, burst); `overrides`, top-level
    settings set over the rendered ones (percentageOfNodesToScore). Without the extender: the same scheduler and
    profile with no `extenders` (a baseline for throughput)."""
    config_map = rendered(repo, mode, "ConfigMap", f"{SCHEDULER_NAME}-config")
    config = copy.deepcopy(yaml.safe_load(config_map["data"]["config.yaml"]))
    if not with_extender:
        del config["extenders"]
    if client_connection is not None:
        config["clientConnection"] = dict(client_connection)
    config.update(overrides or {})
    config.setdefault("clientConnection", {})["kubeconfig"] = kubeconfig
    for extender in config.get("extenders", []):
        assert extender["urlPrefix"].startswith("http://gpu-extender.gpu-extender.svc:"), extender["urlPrefix"]
        extender["urlPrefix"] = f"http://127.0.0.1:{extender_port}"
    return config


def deployment_args(repo, mode):
    """The rendered extender Deployment's args, less what a loopback run sets itself (address, ports)."""
    deployment = rendered(repo, mode, "Deployment", "gpu-extender")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return [a for a in args if not a.startswith(("--address=", "--port=", "--metrics-port="))]


class Extender:
    """The real gpu-extender binary, as its Deployment runs it (the rendered args, its service account)."""

    def __init__(self, control_plane, repo, binary, kubeconfig, mode="names", extra_args=(), name="gpu-extender"):
        self.control_plane = control_plane
        self.args = [binary, *deployment_args(repo, mode), "--kubeconfig", kubeconfig,
                     # No Service to drain from on loopback: a stopped extender goes at once.
                     "--shutdown-drain-seconds", "0",
                     *extra_args]
        self.name = name
        self.port = None
        self.process = None
        self.start()

    def start(self):
        # The port is chosen once and kept, so a restarted extender is where the scheduler's configuration says.
        if self.port is None:
            self.port = plane.free_port()
        args = [*self.args, "--port", str(self.port)]
        env = dict(os.environ, POD_NAMESPACE=NAMESPACE)
        self.process = self.control_plane.start(self.name, args, env)
        plane.wait_healthy(self.process, "gpu-extender", lambda: plane.http_ok(self.url("/readyz")), 60)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def kill(self):
        """SIGKILL: no drain, no goodbye, as a node failure or an OOM kill ends it."""
        self.process.stop(sig=9)
        self.control_plane.processes.remove(self.process)

    def stop(self):
        self.process.stop()
        if self.process in self.control_plane.processes:
            self.control_plane.processes.remove(self.process)

    def metric(self, name, **labels):
        """The sum of a metric's samples whose labels include `labels` (0 when there is none)."""
        with urllib.request.urlopen(self.url("/metrics"), timeout=5) as answer:
            text = answer.read().decode()
        total = 0.0
        for line in text.splitlines():
            if not line.startswith(name) or line.startswith("#"):
                continue
            series, value = line.rsplit(" ", 1)
            metric_name = series.split("{", 1)[0]
            if metric_name != name:
                continue
            if all(f'{k}="{v}"' in series for k, v in labels.items()):
                total += float(value)
        return total


class Scheduler:
    """The real kube-scheduler with a shipped configuration, as the second scheduler's Deployment runs it."""

    def __init__(self, control_plane, repo, mode, extender, kubeconfig, client_connection=None, with_extender=True,
                 overrides=None):
        self.control_plane = control_plane
        config = loopback_scheduler_config(repo, mode, extender.port, kubeconfig, client_connection, with_extender,
                                           overrides)
        self.config_path = os.path.join(control_plane.work, f"scheduler-{mode}.yaml")
        with open(self.config_path, "w") as f:
            yaml.safe_dump(config, f)
        lease = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{SCHEDULER_NAME}"
        control_plane.kube.delete(lease)  # the last scenario's scheduler may have left it held
        gates = [f"--feature-gates={control_plane.feature_gates}"] if control_plane.feature_gates else []
        # --secure-port=0: no health endpoint to serve on loopback; leading is the sign it is up and has RBAC.
        self.process = control_plane.start("kube-scheduler", [
            f"{control_plane.bin}/kube-scheduler", f"--config={self.config_path}", "--secure-port=0", f"--v={os.environ.get('E2E_SCHEDULER_V', '2')}",
            *gates])
        plane.wait_healthy(self.process, "kube-scheduler", lambda: self._leads(lease), 60)

    def _leads(self, lease_path):
        try:
            lease = self.control_plane.kube.get(lease_path)
        except kube.ApiError:
            return False
        return bool(lease["spec"].get("holderIdentity"))

    def stop(self):
        self.process.stop()
        if self.process in self.control_plane.processes:
            self.control_plane.processes.remove(self.process)
