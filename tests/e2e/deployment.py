"""gpu-extender deployed on the real control plane as the manifests deploy it, minus the pods: the shipped
namespace, service accounts and RBAC are created from the repository's files; the extender and the second
scheduler run as their service accounts (tokens from the TokenRequest API), so a missing permission in the
manifests fails here as it would on a cluster. The scheduler reads the shipped KubeSchedulerConfiguration (the
very file the manifests' ConfigMap is generated from), changed only where a loopback run must differ: the
extender's address and the scheduler's kubeconfig."""
import copy
import os
import urllib.request

import yaml

import kube
import plane

NAMESPACE = "gpu-extender"
SCHEDULER_NAME = "gpu-scheduler"
BASE_RBAC = ["manifests/namespace.yaml", "manifests/extender/serviceaccount.yaml", "manifests/extender/rbac.yaml",
             "manifests/scheduler/serviceaccount.yaml", "manifests/scheduler/rbac.yaml"]
SCHEDULER_CONFIGS = {
    "names": "extender-config/scheduler-config-node-cache.yaml",
    "full": "extender-config/scheduler-config-full-nodes.yaml",
    "gpu-share": "overlays/gpu-share/scheduler-config-gpu-share.yaml",
    "dra-claims": "overlays/dra-claims/scheduler-config-dra-claims.yaml",
}


def load_documents(repo, relative):
    with open(os.path.join(repo, relative)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def install(control_plane, repo, extra_rbac=()):
    """Creates the shipped namespace, service accounts and RBAC (idempotent); returns the two kubeconfigs."""
    for relative in [*BASE_RBAC, *extra_rbac]:
        for doc in load_documents(repo, relative):
            control_plane.kube.create(doc, ok_exists=True)
    configs = {}
    for account in ("gpu-extender", "gpu-scheduler"):
        token = control_plane.kube.service_account_token(NAMESPACE, account)
        path = os.path.join(control_plane.work, f"{account}.kubeconfig")
        plane.write_kubeconfig(path, control_plane.api_port, control_plane.ca_file,
                               f"system:serviceaccount:{NAMESPACE}:{account}", token)
        configs[account] = path
    return configs


def loopback_scheduler_config(repo, mode, extender_port, kubeconfig, client_connection=None, with_extender=True):
    """The shipped configuration of `mode`, pointed at the extender on loopback and given a kubeconfig;
    `client_connection`, when given, replaces the shipped client settings (qps, burst). Without the extender:
    the same scheduler and profile with no `extenders` (a baseline for throughput)."""
    [config] = load_documents(repo, SCHEDULER_CONFIGS[mode])
    config = copy.deepcopy(config)
    if not with_extender:
        del config["extenders"]
    if client_connection is not None:
        config["clientConnection"] = dict(client_connection)
    config.setdefault("clientConnection", {})["kubeconfig"] = kubeconfig
    for extender in config.get("extenders", []):
        assert extender["urlPrefix"].startswith("http://gpu-extender.gpu-extender.svc:"), extender["urlPrefix"]
        extender["urlPrefix"] = f"http://127.0.0.1:{extender_port}"
    return config


class Extender:
    """The real gpu-extender binary, as its Deployment runs it (the shipped policy file, its service account)."""

    def __init__(self, control_plane, repo, binary, kubeconfig, extra_args=(), name="gpu-extender"):
        self.control_plane = control_plane
        self.args = [binary, "--policy", os.path.join(repo, "extender-config/policy.yaml"),
                     "--kubeconfig", kubeconfig, "--scheduler-name", SCHEDULER_NAME, "--log-level", "info",
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

    def __init__(self, control_plane, repo, mode, extender, kubeconfig, client_connection=None, with_extender=True):
        self.control_plane = control_plane
        config = loopback_scheduler_config(repo, mode, extender.port, kubeconfig, client_connection, with_extender)
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
