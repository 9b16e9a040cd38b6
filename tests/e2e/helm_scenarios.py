"""The Helm chart (charts/gpu-extender) with real Helm (tests/e2e/helm/build.sh) on the real control plane.

helm_chart: lint and template every documented combination of values (charts/gpu-extender/examples), the
values schema refusing a typo and a wrong type by name; then `helm install` against the real API server
(every object accepted and validated there), the real gpu-extender and kube-scheduler started from what
the release put on the API server (the Deployment's args, the ConfigMap's KubeSchedulerConfiguration, the
Secrets' certificates: mutual TLS as the chart makes it) and a GPU pod placed and bound through them; the
chart's webhook configuration, as installed, called by the API server through the chart's Service;
`helm upgrade` (the CA kept, both certificates signed again, a restarted extender with the new
certificate still trusted by the scheduler that has the old one); `helm uninstall` leaving nothing behind.
There is no kubelet: the chart's pods never run, so the binaries run as they would in them."""
import base64
import glob
import os
import socket
import ssl
import subprocess
import time
import urllib.request

import yaml

import kube
import plane
from objects import GPU, ensure_namespace, gpu_node, node_of, pod, wait_pod_bound

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CHART = os.path.join(REPO, "charts", "gpu-extender")
RELEASE, NAMESPACE, SCHEDULER = "chart-e2e", "helm-e2e", "helm-scheduler"
FULLNAME = f"{RELEASE}-gpu-extender"
# What the release makes, by API path (namespaced ones in the release's namespace, or kube-system).
RELEASE_KINDS = [("/apis/apps/v1", "deployments", True), ("/api/v1", "services", True), ("/api/v1", "secrets", True),
                 ("/api/v1", "configmaps", True), ("/api/v1", "serviceaccounts", True),
                 ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
                 ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
                 ("/apis/networking.k8s.io/v1", "networkpolicies", True),
                 ("/apis/policy/v1", "poddisruptionbudgets", True),
                 ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
                 ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
                 ("/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False)]


def helm(env, *args, check=True, stdout_only=False):
    """Runs the real helm against the control plane (admin kubeconfig); returns (exit code, stdout + stderr, or
    stdout alone)."""
    done = subprocess.run([env.helm, *args, "--kubeconfig", env.plane.admin_kubeconfig], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, HELM_CACHE_HOME=os.path.join(env.plane.work, "helm-cache"),
                                                           HELM_CONFIG_HOME=os.path.join(env.plane.work, "helm-config"),
                                                           HELM_DATA_HOME=os.path.join(env.plane.work, "helm-data")))
    output = done.stdout + done.stderr
    if check and done.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({done.returncode}):\n{output}")
    return done.returncode, done.stdout if stdout_only else output


def render(env, version, *value_args):
    """`helm template` of the release, as documents."""
    _, out = helm(env, "template", RELEASE, CHART, "-n", NAMESPACE, "--kube-version", version, *value_args,
                  stdout_only=True)
    return [d for d in yaml.safe_load_all(out.split("\nNOTES:")[0]) if d]


def find(docs, kind, name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert found, f"no {kind} {name} among {[(d['kind'], d['metadata']['name']) for d in docs]}"
    return found[0]


def scheduler_config(docs):
    return yaml.safe_load(find(docs, "ConfigMap", f"{SCHEDULER}-config")["data"]["config.yaml"])


def check_pods_hardened(docs):
    """Every pod the chart runs: non-root, read-only root filesystem, no privilege escalation, seccomp RuntimeDefault."""
    for d in docs:
        spec = d["spec"]["template"]["spec"] if d["kind"] == "Deployment" else d["spec"] if d["kind"] == "Pod" else None
        if spec is None:
            continue
        assert spec["securityContext"]["runAsNonRoot"] is True, d["metadata"]["name"]
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", d["metadata"]["name"]
        for c in spec["containers"]:
            assert c["securityContext"]["readOnlyRootFilesystem"] is True, c["name"]
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, c["name"]


def template_combinations(env, version):
    """Every example values file renders on this release, and says what it is for."""
    minor_version = version.lstrip("v").split("+")[0].split("-")[0]
    helm(env, "lint", CHART, "--kube-version", minor_version)
    examples = sorted(glob.glob(os.path.join(CHART, "examples", "*.yaml")))
    assert len(examples) >= 10, examples
    rendered = {}
    for example in examples:
        helm(env, "lint", CHART, "-f", example, "--kube-version", minor_version)
        values = ["-f", example, "--set", f"scheduler.name={SCHEDULER}"]
        rendered[os.path.basename(example)[:-5]] = docs = render(env, minor_version, *values)
        check_pods_hardened(docs)
    default = render(env, minor_version, "--set", f"scheduler.name={SCHEDULER}")
    check_pods_hardened(default)
    image = find(default, "Deployment", SCHEDULER)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"registry.k8s.io/kube-scheduler:v{minor_version}", image  # the cluster's own release
    [extender] = scheduler_config(default)["extenders"]
    assert extender["enableHTTPS"] and extender["urlPrefix"].startswith("https://"), extender  # mTLS by default
    assert [r["name"] for r in extender["managedResources"]] == ["nvidia.com/gpu", "custom.resource/aaa"]
    # The switches each example stands for.
    [full] = scheduler_config(rendered["full-mode-groups"])["extenders"]
    assert full["nodeCacheCapable"] is False and "preemptVerb" not in full
    assert scheduler_config(rendered["full-mode-groups"])["percentageOfNodesToScore"] == 100
    [share] = scheduler_config(rendered["gpu-share"])["extenders"]
    assert "aliyun.com/gpu-mem" in [r["name"] for r in share["managedResources"]]
    [claims] = scheduler_config(rendered["dra-claims"])["extenders"]
    assert "managedResources" not in claims
    costs = find(rendered["deletion-costs"], "Deployment", FULLNAME)["spec"]["template"]["spec"]["containers"][0]
    assert "--deletion-costs" in costs["args"] and costs["env"][0]["name"] == "POD_NAMESPACE"
    rules = find(rendered["deletion-costs"], "ClusterRole", FULLNAME)["rules"]
    assert any("patch" in r["verbs"] and r["resources"] == ["pods"] for r in rules), rules
    find(rendered["deletion-costs"], "Role", f"{FULLNAME}-leader-election")
    monitored = rendered["gpu-operator-dcgm"]
    assert find(monitored, "ServiceMonitor", FULLNAME)["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert find(monitored, "ConfigMap", f"{FULLNAME}-dashboard")["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert any(a.startswith("--prometheus-url=") for a in
               find(monitored, "Deployment", FULLNAME)["spec"]["template"]["spec"]["containers"][0]["args"])
    assert find(rendered["gke"], "ResourceQuota", f"{FULLNAME}-critical-pods")
    assert not [d for d in rendered["extender-only"] if d["kind"] == "Deployment" and d["metadata"]["name"] == SCHEDULER]
    assert [d for d in rendered["cert-manager"] if d["kind"] == "Certificate"], "cert-manager's Certificates"
    assert not [d for d in rendered["cert-manager"] if d["kind"] == "Secret"], "no chart-made keys with cert-manager"
    assert find(rendered["custom-policy"], "ConfigMap", f"{FULLNAME}-policy")
    # The schema: a typo and a wrong type fail before anything is sent, naming the value.
    code, out = helm(env, "template", RELEASE, CHART, "--set", "extender.mdoe=full", check=False)
    assert code != 0 and "mdoe" in out, out
    code, out = helm(env, "template", RELEASE, CHART, "--set", "scheduler.replicas=two", check=False)
    assert code != 0 and "/scheduler/replicas" in out, out
    code, out = helm(env, "template", RELEASE, CHART, "--kube-version", "1.38.0", check=False)
    assert code != 0 and "outside the releases this chart supports" in out, out
    return len(examples)


def rendered_files_current(env):
    """manifests/ is what scripts/render-manifests.sh renders from the chart now: no stale copy."""
    out = os.path.join(env.plane.work, "rendered")
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", "render-manifests.sh"), out], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, HELM=env.helm))
    assert done.returncode == 0, done.stdout + done.stderr
    fresh = sorted(os.path.relpath(f, out) for f in glob.glob(os.path.join(out, "**", "*.yaml"), recursive=True))
    committed = sorted(os.path.relpath(f, os.path.join(REPO, "manifests")) for f in
                       glob.glob(os.path.join(REPO, "manifests", "**", "*.yaml"), recursive=True)
                       if "/samples/" not in f and not f.endswith("namespace.yaml"))
    assert fresh == committed, f"rendered {fresh}, committed {committed}: run scripts/render-manifests.sh"
    for relative in fresh:
        with open(os.path.join(out, relative)) as a, open(os.path.join(REPO, "manifests", relative)) as b:
            assert a.read() == b.read(), f"manifests/{relative} is stale: run scripts/render-manifests.sh"
    return len(fresh)


def release_objects(api):
    """(kind, name) of every object labelled with the release, in its namespace, kube-system and the cluster."""
    found = []
    for prefix, resource, namespaced in RELEASE_KINDS:
        paths = [f"{prefix}/namespaces/{ns}/{resource}" for ns in (NAMESPACE, "kube-system")] if namespaced \
            else [f"{prefix}/{resource}"]
        for path in paths:
            try:
                items = api.get(path, labelSelector=f"app.kubernetes.io/instance={RELEASE}")["items"]
            except kube.ApiError:
                continue  # the namespace is gone
            found += [(resource, i["metadata"]["name"]) for i in items]
    return found


def secret_files(api, name, folder):
    """A Secret's keys written as files (as a volume mounts them); returns its data, decoded."""
    data = {k: base64.b64decode(v) for k, v in api.get(f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}")["data"].items()}
    os.makedirs(folder, exist_ok=True)
    for key, value in data.items():
        with open(os.path.join(folder, key), "wb") as f:
            f.write(value)
    return data


class Released:
    """The release's two binaries, run from the objects helm put on the API server."""

    def __init__(self, env):
        self.env, self.api, self.work = env, env.api, os.path.join(env.plane.work, "helm-release")
        self.port, self.metrics_port, self.webhook_port = plane.free_port(), plane.free_port(), plane.free_port()
        self.extender = self.scheduler = None

    def kubeconfig(self, account):
        path = os.path.join(self.work, f"{account}.kubeconfig")
        token = self.api.service_account_token(NAMESPACE, account)
        plane.write_kubeconfig(path, self.env.plane.api_port, self.env.plane.ca_file,
                               f"system:serviceaccount:{NAMESPACE}:{account}", token)
        return path

    def start_extender(self):
        """The Deployment's container args, with free ports and the Secret's files where the volume would be. The
        address stays the chart's 0.0.0.0: the API server calls the webhook at this machine's address (what the
        Service's EndpointSlice names; an endpoint may not be loopback)."""
        deployment = self.api.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{FULLNAME}")
        tls = os.path.join(self.work, "extender-tls")
        secret_files(self.api, f"{FULLNAME}-tls", tls)
        args = []
        for a in deployment["spec"]["template"]["spec"]["containers"][0]["args"]:
            a = a.replace("/etc/gpu-extender-tls", tls)
            a = f"--port={self.port}" if a.startswith("--port=") else a
            a = f"--webhook-port={self.webhook_port}" if a.startswith("--webhook-port=") else a
            args.append(f"--metrics-port={self.metrics_port}" if a.startswith("--metrics-port=") else a)
        assert f"--tls-client-ca-file={tls}/ca.crt" in args, args
        assert f"--tls-client-names={SCHEDULER}" in args, args  # the identity check on
        assert "--address=0.0.0.0" in args and f"--webhook-port={self.webhook_port}" in args, args
        self.extender = self.env.plane.start("gpu-extender", [
            self.env.extender_binary, *args, "--kubeconfig", self.kubeconfig(FULLNAME), "--shutdown-drain-seconds", "0"])
        plane.wait_healthy(self.extender, "gpu-extender",
                           lambda: plane.http_ok(f"http://127.0.0.1:{self.metrics_port}/readyz"), 60)

    def publish_webhook_endpoint(self):
        """What the endpoints controller would write for the extender's pod: the chart's Service has a selector
        but no pod runs here (no kubelet), so its EndpointSlice names this machine's address and the webhook's
        port. The API server (--enable-aggregator-routing) resolves the webhook's Service through it."""
        self.api.create({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                         "metadata": {"name": f"{FULLNAME}-e2e", "namespace": NAMESPACE,
                                      "labels": {"kubernetes.io/service-name": FULLNAME}},
                         "addressType": "IPv4",
                         "endpoints": [{"addresses": [plane.host_address()], "conditions": {"ready": True}}],
                         "ports": [{"name": "webhook", "port": self.webhook_port, "protocol": "TCP"}]})

    def stop_extender(self):
        self.extender.stop()
        self.env.plane.processes.remove(self.extender)

    def start_scheduler(self):
        """The ConfigMap's KubeSchedulerConfiguration: only the extender's address (serverName kept, so the
        certificate is checked for the Service's name) and the files' folder differ."""
        config_map = self.api.get(f"/api/v1/namespaces/{NAMESPACE}/configmaps/{SCHEDULER}-config")
        config = yaml.safe_load(config_map["data"]["config.yaml"])
        tls = os.path.join(self.work, "scheduler-tls")
        secret_files(self.api, f"{SCHEDULER}-tls", tls)
        config["clientConnection"]["kubeconfig"] = self.kubeconfig(SCHEDULER)
        [extender] = config["extenders"]
        assert extender["tlsConfig"]["serverName"] == f"{FULLNAME}.{NAMESPACE}.svc", extender
        extender["urlPrefix"] = f"https://127.0.0.1:{self.port}"
        for key in ("caFile", "certFile", "keyFile"):
            extender["tlsConfig"][key] = extender["tlsConfig"][key].replace("/etc/gpu-scheduler-tls", tls)
        path = os.path.join(self.work, "scheduler.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        self.scheduler = self.env.plane.start("kube-scheduler", [
            f"{self.env.plane.bin}/kube-scheduler", f"--config={path}", "--secure-port=0", "--v=2"])
        lease = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{SCHEDULER}"
        plane.wait_healthy(self.scheduler, "kube-scheduler",
                           lambda: bool(self.api.get(lease)["spec"].get("holderIdentity")) if self._exists(lease) else False, 60)

    def _exists(self, path):
        try:
            self.api.get(path)
            return True
        except kube.ApiError:
            return False

    def answers_without_client_certificate(self):
        """Whether the verbs' port answers a client that trusts the CA but shows no certificate of its own."""
        context = ssl.create_default_context(cafile=os.path.join(self.work, "extender-tls", "ca.crt"))
        context.check_hostname = False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as raw:
                with context.wrap_socket(raw) as tls:
                    tls.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
                    return bool(tls.recv(100))
        except (ssl.SSLError, ConnectionError, OSError):
            return False

    def binds(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("gpu_extender_binds_total") and 'result="bound"' in line)

    def stop(self):
        for process in (self.scheduler, self.extender):
            if process and process in self.env.plane.processes:
                process.stop()
                self.env.plane.processes.remove(process)


def place(env, released, name):
    env.api.create(pod("helm-pods", name, {GPU: "2"}, {"gpu.nvidia.com/model": "H100"}, scheduler=SCHEDULER))
    got = node_of(wait_pod_bound(env.api, "helm-pods", name, 60))
    assert got == "helm-h100", f"{name} went to {got}"


def mutated_through_the_service(env, released):
    """The chart's MutatingWebhookConfiguration exactly as helm installed it (its Service reference and port, its
    CA bundle, namespace selector and match condition): the real API server resolves the Service to the
    released extender's webhook port, checks its certificate for <service>.<namespace>.svc, and the pod comes
    back with the GPU terms; the real scheduler then places it through the extender over mTLS. The chart's
    failurePolicy is Ignore, so an unreached webhook shows as a pod with no terms (retried while the API
    server's informers catch up with the EndpointSlice)."""
    released.publish_webhook_endpoint()
    env.api.create({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "helm-webhook", "labels": {"gpu.nvidia.com/node-affinity": "enabled"}}},
                   ok_exists=True)
    created = None
    for attempt in range(40):
        name = f"mutated-{attempt}"
        env.api.create(pod("helm-webhook", name, {GPU: "2"}, {"gpu.nvidia.com/model": "H100"}, scheduler=SCHEDULER))
        created = env.api.pod("helm-webhook", name)
        if created["spec"].get("affinity"):
            break
        env.api.delete(f"/api/v1/namespaces/helm-webhook/pods/{name}", 0)
        time.sleep(0.25)
    terms = created["spec"].get("affinity", {}).get("nodeAffinity", {}) \
        .get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
    assert terms, "the API server did not reach the webhook through the chart's Service"
    keys = {r["key"]: r["values"] for t in terms for r in t["matchExpressions"]}
    assert keys.get("gpu.nvidia.com/model") == ["H100"], keys
    got = node_of(wait_pod_bound(env.api, "helm-webhook", created["metadata"]["name"], 60))
    assert got == "helm-h100", f"the mutated pod went to {got}"
    env.api.delete("/api/v1/namespaces/helm-webhook", 0)
    return attempt


def helm_chart(env):
    started = time.monotonic()
    version = env.plane.version()
    if not 34 <= env.minor <= 37:  # the chart refuses other releases, by design (its own check is tested)
        return {"skipped": f"the chart supports 1.34 to 1.37, this is {version}"}
    examples = template_combinations(env, version)
    rendered = rendered_files_current(env)
    os.makedirs(os.path.join(env.plane.work, "helm-release"), exist_ok=True)
    install = ["-n", NAMESPACE, "--set", f"scheduler.name={SCHEDULER}",
               "--set", "image.repository=registry.example.com/gpu-extender"]
    released = Released(env)
    try:
        helm(env, "install", RELEASE, CHART, "--create-namespace", *install)
        made = release_objects(env.api)
        assert ("deployments", FULLNAME) in made and ("deployments", SCHEDULER) in made, made
        assert ("mutatingwebhookconfigurations", FULLNAME) in made, made  # accepted, CEL matchConditions too
        scheduler = env.api.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{SCHEDULER}")
        image = scheduler["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == f"registry.k8s.io/kube-scheduler:{version.split('+')[0]}", image  # the server's version
        released.start_extender()
        released.start_scheduler()
        ensure_namespace(env.api, "helm-pods")
        gpu_node(env.api, "helm-a100", "A100", 40960, 8)
        gpu_node(env.api, "helm-h100", "H100", 81920, 8)
        place(env, released, "first")
        assert released.binds() == 1, "the extender did not bind through mTLS"
        assert not released.answers_without_client_certificate(), "the extender answered a client with no certificate"
        webhook_retries = mutated_through_the_service(env, released)
        assert released.binds() == 2, "the mutated pod was not bound through mTLS"

        ca_before = secret_files(env.api, f"{FULLNAME}-ca", os.path.join(env.plane.work, "ca-1"))["ca.crt"]
        cert_before = secret_files(env.api, f"{FULLNAME}-tls", os.path.join(env.plane.work, "tls-1"))["tls.crt"]
        helm(env, "upgrade", RELEASE, CHART, *install, "--set", "extender.replicas=3")
        ca_after = secret_files(env.api, f"{FULLNAME}-ca", os.path.join(env.plane.work, "ca-2"))["ca.crt"]
        cert_after = secret_files(env.api, f"{FULLNAME}-tls", os.path.join(env.plane.work, "tls-2"))["tls.crt"]
        assert ca_after == ca_before, "the upgrade replaced the CA: old and new pods would not trust each other"
        assert cert_after != cert_before, "the upgrade did not sign the serving certificate again"
        extender = env.api.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{FULLNAME}")
        assert extender["spec"]["replicas"] == 3
        assert extender["spec"]["template"]["metadata"]["annotations"]["gpu-extender/certificates-of-revision"] == "2"
        # The rollout: a new extender with the new certificate; the scheduler still has its old client one.
        released.stop_extender()
        released.start_extender()
        place(env, released, "after-upgrade")
        assert released.binds() == 1, "the new extender did not bind for the old scheduler"
    finally:
        released.stop()
        code, out = helm(env, "uninstall", RELEASE, "-n", NAMESPACE, check=False)
    assert code == 0, out
    kube.wait_for("nothing of the release left (helm uninstall)", lambda: not release_objects(env.api), 30)
    return {"pods placed": 3, "webhook retries": webhook_retries, "values files": examples, "rendered files current": rendered,
            "seconds": time.monotonic() - started}


SCENARIOS = [helm_chart]
