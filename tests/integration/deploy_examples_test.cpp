// The chart's documented combinations of values (charts/gpu-extender/examples: mutual TLS with cert-manager,
// GKE, DCGM with kube-prometheus-stack, GPU sharing, deletion costs, ...), as rendered into
// manifests/examples/, checked against the defaults and the real binary.
#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "deploy_support.h"
#include "fake_api_server.h"

using test_support::ExtenderProcess;
using namespace deploy_support;

TEST_CASE("deploy: every rendered file runs the same two images, the scheduler's of a tested release") {
  const auto base = rendered_manifests();
  const YAML::Node* base_extender = find(base, "Deployment", "gpu-extender");
  const YAML::Node* base_scheduler = find(base, "Deployment", "gpu-scheduler");
  REQUIRE((base_extender && base_scheduler));
  const std::string expected = extender_container(*base_extender)["image"].as<std::string>();
  CHECK(expected.find('/') != std::string::npos);  // a registry path, never a bare name Docker Hub would resolve
  const std::string expected_scheduler = (*base_scheduler)["spec"]["template"]["spec"]["containers"][0]["image"].as<std::string>();
  CHECK(expected_scheduler.rfind("registry.k8s.io/kube-scheduler:v1.", 0) == 0);
  for (const char* example : {"cert-manager", "custom-policy", "deletion-costs", "dra-claims", "eks-auto-mode", "eks-karpenter",
                              "full-mode-groups", "gke", "gpu-operator-dcgm", "gpu-share", "topology", "gpu-operator-mig"}) {
    INFO(example);
    const auto docs = rendered_manifests(example);
    const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
    const YAML::Node* scheduler = find(docs, "Deployment", "gpu-scheduler");
    REQUIRE((extender && scheduler));
    CHECK(extender_container(*extender)["image"].as<std::string>() == expected);
    CHECK((*scheduler)["spec"]["template"]["spec"]["containers"][0]["image"].as<std::string>() == expected_scheduler);
  }
  // The extender alone: no second scheduler, and /bind serves the user's scheduler too.
  const auto alone = rendered_manifests("extender-only");
  CHECK_FALSE(find(alone, "Deployment", "gpu-scheduler"));
  const YAML::Node* extender = find(alone, "Deployment", "gpu-extender");
  REQUIRE(extender);
  CHECK(arg_value(extender_container(*extender), "scheduler-name") == "gpu-scheduler,my-scheduler");
}

TEST_CASE("deploy: with TLS, mutual TLS is served on its own Service port, probes on the metrics port") {
  const auto docs = rendered_manifests("cert-manager");
  const YAML::Node* service = find(docs, "Service", "gpu-extender");
  const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
  const YAML::Node* scheduler = find(docs, "Deployment", "gpu-scheduler");
  const YAML::Node* config_map = find(docs, "ConfigMap", "gpu-scheduler-config");
  const YAML::Node* policy = find(docs, "NetworkPolicy", "gpu-extender");
  REQUIRE((service && extender && scheduler && config_map && policy));
  const YAML::Node container = extender_container(*extender);
  const YAML::Node extender_pod = (*extender)["spec"]["template"]["spec"];

  // The Service: https on 8443 to the container's port of that name, no plain verb port left.
  std::map<std::string, std::string> service_ports, container_ports;  // name -> port
  for (const auto& port : (*service)["spec"]["ports"]) service_ports[port["name"].as<std::string>()] = port["port"].as<std::string>();
  for (const auto& port : container["ports"]) container_ports[port["name"].as<std::string>()] = port["containerPort"].as<std::string>();
  const std::map<std::string, std::string> expected_ports{{"https", "8443"}, {"metrics", "9090"}, {"webhook", "9443"}};
  CHECK(service_ports == expected_ports);
  CHECK(container_ports == expected_ports);
  // The admission webhook: the API server calls the Service's webhook port, served with the same
  // certificate (it names the Service), its CA injected by cert-manager.
  CHECK(arg_value(container, "webhook-port") == "9443");
  CHECK(arg_value(container, "webhook-tls-cert-file").empty());
  const YAML::Node* hook = find(docs, "MutatingWebhookConfiguration", "gpu-extender");
  REQUIRE(hook);
  const YAML::Node client = (*hook)["webhooks"][0]["clientConfig"];
  CHECK(client["service"]["name"].as<std::string>() == (*service)["metadata"]["name"].as<std::string>());
  CHECK(client["service"]["port"].as<std::string>() == service_ports["webhook"]);
  CHECK(client["service"]["path"].as<std::string>() == "/mutate-pods");
  CHECK((*hook)["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].as<std::string>() == "gpu-extender/gpu-extender-tls");
  CHECK((*hook)["webhooks"][0]["failurePolicy"].as<std::string>() == "Ignore");
  CHECK(arg_value(container, "port") == "8443");
  // Certificate, key and client CA all come from the extender's Secret.
  for (const char* flag : {"tls-cert-file", "tls-key-file", "tls-client-ca-file"}) {
    INFO(flag);
    CHECK(secret_holding(extender_pod, container, arg_value(container, flag)) == "gpu-extender-tls");
  }
  for (const char* probe : {"livenessProbe", "readinessProbe"}) CHECK(container[probe]["httpGet"]["port"].as<std::string>() == "metrics");
  // Only the scheduler reaches the verbs, now on https.
  CHECK((*policy)["spec"]["ingress"][0]["ports"][0]["port"].as<std::string>() == "https");

  // The scheduler calls the Service's https port over TLS with its own certificate, from its Secret.
  const YAML::Node config = YAML::Load((*config_map)["data"]["config.yaml"].as<std::string>());
  const YAML::Node ext = config["extenders"][0];
  CHECK(ext["urlPrefix"].as<std::string>() == "https://gpu-extender.gpu-extender.svc:" + service_ports["https"]);
  CHECK(ext["enableHTTPS"].as<bool>());
  CHECK(ext["tlsConfig"]["serverName"].as<std::string>() == "gpu-extender.gpu-extender.svc");
  const YAML::Node scheduler_pod = (*scheduler)["spec"]["template"]["spec"];
  for (const char* file : {"caFile", "certFile", "keyFile"}) {
    INFO(file);
    CHECK(secret_holding(scheduler_pod, scheduler_pod["containers"][0], ext["tlsConfig"][file].as<std::string>()) ==
          "gpu-scheduler-tls");
  }

  // cert-manager writes both Secrets (no key is in the rendered file).
  for (const auto& d : docs) CHECK(d["kind"].as<std::string>() != "Secret");
  const YAML::Node* server_cert = find(docs, "Certificate", "gpu-extender-tls");
  const YAML::Node* client_cert = find(docs, "Certificate", "gpu-scheduler-tls");
  REQUIRE((server_cert && client_cert));
  CHECK((*server_cert)["spec"]["secretName"].as<std::string>() == "gpu-extender-tls");
  CHECK((*server_cert)["spec"]["dnsNames"][0].as<std::string>() == ext["tlsConfig"]["serverName"].as<std::string>());
  CHECK((*client_cert)["spec"]["secretName"].as<std::string>() == "gpu-scheduler-tls");
  CHECK((*client_cert)["spec"]["usages"][0].as<std::string>() == "client auth");
  // The real binary takes these args (the Secret's files replaced by the test's certificate).
  const auto& cert = test_support::TestCertificate::get();
  std::vector<std::string> args;
  for (std::string a : container_args(container)) {
    if (a.rfind("--tls-cert-file=", 0) == 0 || a.rfind("--tls-client-ca-file=", 0) == 0) a = a.substr(0, a.find('=') + 1) + cert.cert_file;
    if (a.rfind("--tls-key-file=", 0) == 0) a = "--tls-key-file=" + cert.key_file;
    args.push_back(a);
  }
  check_binary_accepts(args);
}

TEST_CASE("deploy: the GKE example's quota admits the scheduler's priority class in its namespace") {
  const auto docs = rendered_manifests("gke");
  const YAML::Node* scheduler = find(docs, "Deployment", "gpu-scheduler");
  const YAML::Node* quota = find(docs, "ResourceQuota", "gpu-extender-critical-pods");
  REQUIRE((scheduler && quota));
  const std::string priority_class = (*scheduler)["spec"]["template"]["spec"]["priorityClassName"].as<std::string>();
  CHECK((*quota)["metadata"]["namespace"].as<std::string>() == (*scheduler)["metadata"]["namespace"].as<std::string>());
  const YAML::Node scope = (*quota)["spec"]["scopeSelector"]["matchExpressions"][0];
  CHECK(scope["scopeName"].as<std::string>() == "PriorityClass");
  CHECK(scope["operator"].as<std::string>() == "In");
  bool covered = false;
  for (const auto& value : scope["values"]) covered |= value.as<std::string>() == priority_class;
  CHECK(covered);
  const int replicas = (*scheduler)["spec"]["replicas"] ? (*scheduler)["spec"]["replicas"].as<int>() : 1;
  CHECK((*quota)["spec"]["hard"]["pods"].as<int>() >= 2 * replicas);  // room for a rolling update
  CHECK(rendered_manifests().size() + 1 == docs.size());                // the defaults, plus the quota
}

TEST_CASE("deploy: the DCGM example points the extender at Prometheus and grants what kube-rbac-proxy checks") {
  const auto docs = rendered_manifests("gpu-operator-dcgm");
  const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
  const YAML::Node* role = find(docs, "ClusterRole", "gpu-extender");
  REQUIRE((extender && role));
  const YAML::Node container = extender_container(*extender);
  CHECK(arg_value(container, "prometheus-url").rfind("http://", 0) == 0);
  bool reads_namespaces = false;
  for (const auto& rule : (*role)["rules"])
    reads_namespaces |= rule["resources"][0].as<std::string>() == "namespaces" && rule["verbs"][0].as<std::string>() == "get";
  CHECK(reads_namespaces);
  check_binary_accepts(container_args(container));
  // kube-prometheus-stack: its Prometheus selects the ServiceMonitor, which scrapes a port the Service has.
  const YAML::Node* monitor = find(docs, "ServiceMonitor", "gpu-extender");
  const YAML::Node* dashboard = find(docs, "ConfigMap", "gpu-extender-dashboard");
  const YAML::Node* service = find(docs, "Service", "gpu-extender");
  REQUIRE((monitor && dashboard && service));
  CHECK((*monitor)["metadata"]["labels"]["release"].as<std::string>() == "kube-prometheus-stack");
  CHECK((*dashboard)["metadata"]["labels"]["grafana_dashboard"].as<std::string>() == "1");
  const std::string port = (*monitor)["spec"]["endpoints"][0]["port"].as<std::string>();
  bool has_port = false;
  for (const auto& p : (*service)["spec"]["ports"]) has_port |= p["name"].as<std::string>() == port;
  CHECK(has_port);
  for (const auto& kv : (*monitor)["spec"]["selector"]["matchLabels"])
    CHECK((*service)["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>() == kv.second.as<std::string>());
}

namespace {
// Whether a ClusterRole grants `verb` on `resource` (core group).
bool grants(const YAML::Node& role, const std::string& resource, const std::string& verb) {
  for (const auto& rule : role["rules"])
    for (const auto& r : rule["resources"])
      for (const auto& v : rule["verbs"])
        if (r.as<std::string>() == resource && v.as<std::string>() == verb) return true;
  return false;
}
}  // namespace

TEST_CASE("deploy: the GPU-sharing example sends gpu-mem pods to the extender and lets it patch their annotations") {
  const auto docs = rendered_manifests("gpu-share");
  const YAML::Node* config_map = find(docs, "ConfigMap", "gpu-scheduler-config");
  const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
  const YAML::Node* role = find(docs, "ClusterRole", "gpu-extender");
  REQUIRE((config_map && extender && role));
  const YAML::Node config = YAML::Load((*config_map)["data"]["config.yaml"].as<std::string>());
  bool managed = false;
  for (const auto& r : config["extenders"][0]["managedResources"]) managed |= r["name"].as<std::string>() == "aliyun.com/gpu-mem";
  CHECK(managed);
  CHECK(config["extenders"][0]["bindVerb"].as<std::string>() == "bind");
  // The policy the extender runs (the embedded default: no --policy) reads the same resource.
  CHECK(arg_value(extender_container(*extender), "policy").empty());
  const auto policy = gpu_extender::parse_policy(test_support::read_file(test_support::source_path("extender-config/policy.yaml")),
                                                 "policy.yaml");
  CHECK(policy.schema.resources.name(gpu_extender::ViewSchema::kSharedGpuMemory) == "aliyun.com/gpu-mem");
  CHECK(grants(*role, "pods", "patch"));
  CHECK_FALSE(grants(*find(rendered_manifests(), "ClusterRole", "gpu-extender"), "pods", "patch"));  // only here
}

TEST_CASE("deploy: the deletion-costs example turns the writer on, with its Lease in the extender's namespace") {
  const auto docs = rendered_manifests("deletion-costs");
  const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
  const YAML::Node* patcher = find(docs, "ClusterRole", "gpu-extender");
  const YAML::Node* lease_role = find(docs, "Role", "gpu-extender-leader-election");
  const YAML::Node* lease_binding = find(docs, "RoleBinding", "gpu-extender-leader-election");
  REQUIRE((extender && patcher && lease_role && lease_binding));
  const YAML::Node container = extender_container(*extender);
  const auto args = container_args(container);
  CHECK(std::find(args.begin(), args.end(), "--deletion-costs") != args.end());
  CHECK(container["env"][0]["name"].as<std::string>() == "POD_NAMESPACE");
  CHECK(container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>() == "metadata.namespace");
  CHECK(grants(*patcher, "pods", "patch"));
  // The Lease is in the extender's own namespace, which is where the Role grants it.
  const std::string ns = (*extender)["metadata"]["namespace"].as<std::string>();
  CHECK((*lease_role)["metadata"]["namespace"].as<std::string>() == ns);
  // create of any Lease (RBAC cannot name one not made yet), get and update of the writer's own only.
  std::set<std::string> verbs;
  for (const auto& rule : (*lease_role)["rules"]) {
    CHECK(rule["resources"][0].as<std::string>() == "leases");
    const std::string named = rule["resourceNames"] ? rule["resourceNames"][0].as<std::string>() : "";
    for (const auto& v : rule["verbs"]) verbs.insert(v.as<std::string>() + (named.empty() ? "" : " " + named));
  }
  CHECK(verbs == std::set<std::string>{"create", "get gpu-extender-deletion-costs", "update gpu-extender-deletion-costs"});
  check_binds_service_account(*lease_binding, *extender);
  // With an API server to talk to: the writer needs one.
  test_support::FakeApiServer api;
  check_binary_accepts(args, api.extender_args());
}
