"""The real control plane on loopback for the end-to-end suite: etcd, kube-apiserver, kube-controller-manager (the
controllers a scenario needs) and, per scenario, kube-scheduler with the shipped configuration and the real
gpu-extender binary. Every process gets a free port, writes its log under the run's work folder and is stopped at
the end (its process group killed, so nothing outlives the suite)."""
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.request

import kube

ADMIN_TOKEN_FILE = "admin.token"


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


_handed_out = set()


def free_port():
    """A loopback port no process holds, taken below the kernel's ephemeral range: a port the kernel chose with
    bind(0) is in that range, so one of the suite's thousands of outgoing connections can take it as its source
    port before the server binds it (CI saw kube-apiserver fail with "address already in use"). Each port is
    handed out once per run."""
    low, _ = _ephemeral_range()
    first, last = max(1024, low - 12000), low - 1
    start = first + (os.getpid() * 7919) % (last - first)
    for offset in range(last - first):
        port = first + (start - first + offset) % (last - first)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free loopback port in {first}-{last}")


def host_address():
    """This machine's first non-loopback IPv4 address: an EndpointSlice may not name loopback, so a Service
    reached through its endpoints (the admission webhook's) points here."""
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    for address in out:
        if "." in address and not address.startswith(("127.", "169.254.")):
            return address
    raise RuntimeError(f"no non-loopback IPv4 address on this machine (hostname -I: {out}): the webhook "
                       "scenario needs one for the Service's EndpointSlice")


def run_quiet(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_pki(folder):
    """A CA, the API server's serving certificate, the service-account key pair and an admin token."""
    os.makedirs(folder, exist_ok=True)
    at = lambda name: os.path.join(folder, name)
    run_quiet("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", at("ca.key"), "-out",
              at("ca.crt"), "-days", "30", "-subj", "/CN=e2e-ca")
    run_quiet("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", at("apiserver.key"), "-out",
              at("apiserver.csr"), "-subj", "/CN=kube-apiserver")
    with open(at("apiserver.ext"), "w") as ext:
        ext.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                  "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run_quiet("openssl", "x509", "-req", "-in", at("apiserver.csr"), "-CA", at("ca.crt"), "-CAkey", at("ca.key"),
              "-CAcreateserial", "-out", at("apiserver.crt"), "-days", "30", "-extfile", at("apiserver.ext"))
    run_quiet("openssl", "genrsa", "-out", at("sa.key"), "2048")
    run_quiet("openssl", "rsa", "-in", at("sa.key"), "-pubout", "-out", at("sa.pub"))
    token = os.urandom(16).hex()
    with open(at("tokens.csv"), "w") as tokens:
        tokens.write(f'{token},admin,uid-admin,"system:masters"\n')
    with open(at(ADMIN_TOKEN_FILE), "w") as f:
        f.write(token)
    return token


def write_kubeconfig(path, api_port, ca_file, user, token):
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:{api_port}
    certificate-authority: {ca_file}
users:
- name: {user}
  user:
    token: {token}
contexts:
- name: e2e
  context: {{cluster: e2e, user: {user}}}
current-context: e2e
""")
    os.chmod(path, 0o600)


class Process:
    """One child process in its own process group, its output in a log file."""

    def __init__(self, name, args, work, env=None):
        self.name = name
        self.log_path = os.path.join(work, f"{name}.log")
        self.log = open(self.log_path, "ab")
        self.popen = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True, env=env)

    def alive(self):
        return self.popen.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.alive():
            try:
                os.killpg(self.popen.pid, sig)
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
            except ProcessLookupError:
                pass
        self.log.close()

    def tail(self, lines=30):
        with open(self.log_path, "rb") as f:
            return b"".join(f.readlines()[-lines:]).decode(errors="replace")


def wait_healthy(process, what, probe, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.alive():
            raise RuntimeError(f"{what} exited:\n{process.tail()}")
        try:
            if probe():
                return
        except OSError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{what} not ready after {timeout}s:\n{process.tail()}")


def http_ok(url, context=None):
    with urllib.request.urlopen(url, timeout=2, context=context) as answer:
        return answer.status == 200


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager of one release, for the whole run on that release."""

    def __init__(self, bin_dir, work, controllers="replicaset,job,garbagecollector,resourceclaim-controller,disruption", apiserver_flags=(),
                 feature_gates=""):
        self.bin = bin_dir
        self.work = work
        self.feature_gates = feature_gates
        self.processes = []
        os.makedirs(work, exist_ok=True)
        self.pki = os.path.join(work, "pki")
        token = make_pki(self.pki)
        self.ca_file = os.path.join(self.pki, "ca.crt")
        self.api_port = free_port()
        self.admin_kubeconfig = os.path.join(work, "admin.kubeconfig")
        write_kubeconfig(self.admin_kubeconfig, self.api_port, self.ca_file, "admin", token)

        etcd_client, etcd_peer = free_port(), free_port()
        etcd = self.start("etcd", [f"{bin_dir}/etcd", "--name", "e2e", "--data-dir", os.path.join(work, "etcd"),
                                   "--listen-client-urls", f"http://127.0.0.1:{etcd_client}",
                                   "--advertise-client-urls", f"http://127.0.0.1:{etcd_client}",
                                   "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
                                   "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
                                   "--initial-cluster", f"e2e=http://127.0.0.1:{etcd_peer}",
                                   "--unsafe-no-fsync"])
        wait_healthy(etcd, "etcd", lambda: http_ok(f"http://127.0.0.1:{etcd_client}/health"), 60)

        p = lambda name: os.path.join(self.pki, name)
        gates = [f"--feature-gates={feature_gates}"] if feature_gates else []
        apiserver = self.start("kube-apiserver", [
            f"{bin_dir}/kube-apiserver", f"--etcd-servers=http://127.0.0.1:{etcd_client}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.api_port}",
            f"--tls-cert-file={p('apiserver.crt')}", f"--tls-private-key-file={p('apiserver.key')}",
            f"--cert-dir={os.path.join(work, 'apiserver-certs')}",
            f"--client-ca-file={p('ca.crt')}", f"--token-auth-file={p('tokens.csv')}", "--authorization-mode=RBAC",
            # 1.37 refuses to start when the request-header CA overlaps the client CA without allowed names.
            f"--requestheader-client-ca-file={p('ca.crt')}", "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={p('sa.pub')}", f"--service-account-signing-key-file={p('sa.key')}",
            "--service-cluster-ip-range=10.0.0.0/24", "--disable-admission-plugins=ServiceAccount",
            "--endpoint-reconciler-type=none", "--profiling=false",
            # A webhook named by its Service is called at the Service's EndpointSlice address (as konnectivity-
            # less clusters with no route to cluster IPs do); there is no kube-proxy here to route a cluster IP.
            "--enable-aggregator-routing=true", "--v=1", *gates, *apiserver_flags])
        tls = ssl.create_default_context(cafile=self.ca_file)
        wait_healthy(apiserver, "kube-apiserver",
                     lambda: http_ok(f"https://127.0.0.1:{self.api_port}/readyz", tls), 180)
        self.kube = kube.Kube(self.api_port, token, self.ca_file)

        kcm = self.start("kube-controller-manager", [
            f"{bin_dir}/kube-controller-manager", f"--kubeconfig={self.admin_kubeconfig}",
            f"--controllers={controllers}", "--use-service-account-credentials=false", "--leader-elect=false",
            "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
            f"--cert-dir={os.path.join(work, 'kcm-certs')}", "--profiling=false", "--v=1", *gates])
        # The controllers are up once the ReplicaSet controller has synced: a throwaway ReplicaSet gets a pod.
        self._wait_controllers(kcm)

    def start(self, name, args, env=None):
        process = Process(name, args, self.work, env)
        self.processes.append(process)
        return process

    def _wait_controllers(self, kcm):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not kcm.alive():
                raise RuntimeError(f"kube-controller-manager exited:\n{kcm.tail()}")
            with open(kcm.log_path, "rb") as log:
                if b"Caches are synced" in log.read():
                    return
            time.sleep(0.25)
        raise RuntimeError(f"kube-controller-manager not ready:\n{kcm.tail()}")

    def version(self):
        return self.kube.get("/version")["gitVersion"]

    def stop(self):
        for process in reversed(self.processes):
            process.stop()
        self.processes = []
