"""A small client of the real kube-apiserver for the end-to-end suite: REST over one kept-alive TLS connection per
thread, a bearer token, the cluster's CA. No kubectl, no client library: the suite needs a dozen calls, and each
is written the way the API documents it."""
import http.client
import json
import ssl
import threading
import time
import urllib.parse

# The paths of the kinds the suite creates from YAML documents (the shipped manifests among them).
KIND_PATHS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "DeviceTaintRule": ("/apis/resource.k8s.io/v1", "devicetaintrules", False),
    "EndpointSlice": ("/apis/discovery.k8s.io/v1", "endpointslices", True),
    "MutatingWebhookConfiguration": ("/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "NodePool": ("/apis/karpenter.sh/v1", "nodepools", False),
    "NodeClaim": ("/apis/karpenter.sh/v1", "nodeclaims", False),
    "KWOKNodeClass": ("/apis/karpenter.kwok.sh/v1alpha1", "kwoknodeclasses", False),
}


class ApiError(Exception):
    def __init__(self, method, path, status, body):
        super().__init__(f"{method} {path}: HTTP {status}: {body[:400]}")
        self.status = status
        self.body = body


class Kube:
    def __init__(self, port, token, ca_file):
        self.port = port
        self.token = token
        self.tls = ssl.create_default_context(cafile=ca_file)
        self.local = threading.local()

    def _connection(self):
        if getattr(self.local, "connection", None) is None:
            self.local.connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls, timeout=30)
        return self.local.connection

    def call(self, method, path, body=None, content_type="application/json", ok_statuses=()):
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for attempt in range(3):
            connection = self._connection()
            try:
                connection.request(method, path, data, headers)
                answer = connection.getresponse()
                raw = answer.read()
                break
            except (http.client.HTTPException, OSError):
                # A kept-alive connection the server closed (or an API server restarting): one new connection.
                connection.close()
                self.local.connection = None
                if attempt == 2:
                    raise
                time.sleep(0.5)
        if answer.status >= 300 and answer.status not in ok_statuses:
            raise ApiError(method, path, answer.status, raw.decode(errors="replace"))
        return json.loads(raw) if raw else None

    def get(self, path, **query):
        return self.call("GET", path + ("?" + urllib.parse.urlencode(query) if query else ""))

    def post(self, path, body, ok_statuses=()):
        return self.call("POST", path, body, ok_statuses=ok_statuses)

    def merge_patch(self, path, body):
        return self.call("PATCH", path, body, "application/merge-patch+json")

    def delete(self, path, grace_seconds=None):
        body = None if grace_seconds is None else {"kind": "DeleteOptions", "apiVersion": "v1",
                                                  "gracePeriodSeconds": grace_seconds}
        return self.call("DELETE", path, body, ok_statuses=(404,))

    # --- objects ---

    def object_path(self, kind, namespace=None, name=None):
        prefix, plural, namespaced = KIND_PATHS[kind]
        path = prefix + (f"/namespaces/{namespace}" if namespaced else "") + "/" + plural
        return path + (f"/{name}" if name else "")

    def create(self, obj, ok_exists=False):
        """Creates a document as `kubectl create` would; with ok_exists, an object already there is kept."""
        namespace = obj["metadata"].get("namespace", "default")
        return self.post(self.object_path(obj["kind"], namespace), obj, ok_statuses=(409,) if ok_exists else ())

    def pods(self, namespace, selector=None):
        query = {"labelSelector": selector} if selector else {}
        return self.get(f"/api/v1/namespaces/{namespace}/pods", **query)["items"]

    def pod(self, namespace, name):
        return self.get(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def nodes(self):
        return self.get("/api/v1/nodes")["items"]

    def events_about(self, namespace, name):
        """The core/v1 events about one object (kube-scheduler writes events.k8s.io/v1; the API serves both)."""
        return self.get(f"/api/v1/namespaces/{namespace}/events",
                        fieldSelector=f"involvedObject.name={name}")["items"]

    def service_account_token(self, namespace, name, seconds=86400):
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": seconds}}
        answer = self.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", request)
        return answer["status"]["token"]


def wait_for(what, predicate, timeout=60.0, interval=0.2):
    """Polls predicate until it returns a truthy value, which it returns; fails naming `what` after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
