// The overlays of manifests/ (HTTPS, GKE, DCGM, GPU sharing, deletion costs, kube-prometheus-stack),
// rendered with kubectl kustomize and checked against the base and the real binary.
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

TEST_CASE("deploy: the images are named in one place, manifests/kustomization.yaml, for the base and every overlay") {
  const YAML::Node kustomization = YAML::LoadFile(test_support::source_path("manifests/kustomization.yaml"));
  REQUIRE(kustomization["images"].size() == 2);  // the extender's, and the second scheduler's version
  const YAML::Node image = kustomization["images"][0];
  REQUIRE(image["name"].as<std::string>() == "gpu-extender");
  const std::string expected = image["newName"].as<std::string>() + ":" + image["newTag"].as<std::string>();
  CHECK(expected.find('/') != std::string::npos);  // a registry path, never a bare name Docker Hub would resolve
  const YAML::Node scheduler_image = kustomization["images"][1];
  REQUIRE(scheduler_image["name"].as<std::string>() == "registry.k8s.io/kube-scheduler");
  const std::string expected_scheduler = "registry.k8s.io/kube-scheduler:" + scheduler_image["newTag"].as<std::string>();
  for (const char* dir : {"manifests", "overlays/https", "overlays/gke", "overlays/dcgm-prometheus", "overlays/gpu-share", "overlays/deletion-costs",
                          "overlays/dra-claims"}) {
    INFO(dir);
    const auto docs = rendered_manifests(dir);
    const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
    const YAML::Node* scheduler = find(docs, "Deployment", "gpu-scheduler");
    REQUIRE((extender && scheduler));
    CHECK(extender_container(*extender)["image"].as<std::string>() == expected);
    CHECK((*scheduler)["spec"]["template"]["spec"]["containers"][0]["image"].as<std::string>() == expected_scheduler);
  }
}

TEST_CASE("deploy: the HTTPS overlay serves mutual TLS on its own Service port, probes on the metrics port") {
  const auto docs = rendered_manifests("overlays/https");
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
  CHECK(service_ports == std::map<std::string, std::string>{{"https", "8443"}, {"metrics", "9090"}});
  CHECK(container_ports == std::map<std::string, std::string>{{"https", "8443"}, {"metrics", "9090"}});
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

TEST_CASE("deploy: the GKE overlay's quota admits the scheduler's priority class in its namespace") {
  const auto docs = rendered_manifests("overlays/gke");
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
  CHECK(rendered_manifests().size() + 1 == docs.size());                // the base, plus the quota
}

TEST_CASE("deploy: the DCGM overlay points the extender at Prometheus and grants what kube-rbac-proxy checks") {
  const auto docs = rendered_manifests("overlays/dcgm-prometheus");
  const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
  const YAML::Node* role = find(docs, "ClusterRole", "gpu-extender-prometheus-reader");
  const YAML::Node* binding = find(docs, "ClusterRoleBinding", "gpu-extender-prometheus-reader");
  REQUIRE((extender && role && binding));
  const YAML::Node container = extender_container(*extender);
  CHECK(arg_value(container, "prometheus-url").rfind("http://", 0) == 0);
  CHECK((*role)["rules"][0]["resources"][0].as<std::string>() == "namespaces");
  CHECK((*role)["rules"][0]["verbs"][0].as<std::string>() == "get");
  // Bound to the service account the extender runs as, in its namespace.
  CHECK((*binding)["roleRef"]["name"].as<std::string>() == (*role)["metadata"]["name"].as<std::string>());
  check_binds_service_account(*binding, *extender);
  check_binary_accepts(container_args(container));
}

TEST_CASE("deploy: the GPU-sharing overlay sends gpu-mem pods to the extender and lets it patch their annotations") {
  const auto docs = rendered_manifests("overlays/gpu-share");
  const YAML::Node* config_map = find(docs, "ConfigMap", "gpu-scheduler-config");
  const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
  const YAML::Node* role = find(docs, "ClusterRole", "gpu-extender-gpu-share");
  const YAML::Node* binding = find(docs, "ClusterRoleBinding", "gpu-extender-gpu-share");
  REQUIRE((config_map && extender && role && binding));
  const YAML::Node config = YAML::Load((*config_map)["data"]["config.yaml"].as<std::string>());
  bool managed = false;
  for (const auto& r : config["extenders"][0]["managedResources"]) managed |= r["name"].as<std::string>() == "aliyun.com/gpu-mem";
  CHECK(managed);
  CHECK(config["extenders"][0]["bindVerb"].as<std::string>() == "bind");
  // The policy the extender runs reads the same resource.
  const YAML::Node* policy_map = find(docs, "ConfigMap", "gpu-extender-policy");
  REQUIRE(policy_map);
  const auto policy = gpu_extender::parse_policy((*policy_map)["data"]["policy.yaml"].as<std::string>(), "ConfigMap");
  CHECK(policy.schema.resources.name(gpu_extender::ViewSchema::kSharedGpuMemory) == "aliyun.com/gpu-mem");
  CHECK((*role)["rules"][0]["resources"][0].as<std::string>() == "pods");
  CHECK((*role)["rules"][0]["verbs"][0].as<std::string>() == "patch");
  check_binds_service_account(*binding, *extender);
}

TEST_CASE("deploy: the deletion-costs overlay turns the writer on, with its Lease in the extender's namespace") {
  const auto docs = rendered_manifests("overlays/deletion-costs");
  const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
  const YAML::Node* patcher = find(docs, "ClusterRole", "gpu-extender-deletion-costs");
  const YAML::Node* patcher_binding = find(docs, "ClusterRoleBinding", "gpu-extender-deletion-costs");
  const YAML::Node* lease_role = find(docs, "Role", "gpu-extender-leader-election");
  const YAML::Node* lease_binding = find(docs, "RoleBinding", "gpu-extender-leader-election");
  REQUIRE((extender && patcher && patcher_binding && lease_role && lease_binding));
  const YAML::Node container = extender_container(*extender);
  const auto args = container_args(container);
  CHECK(std::find(args.begin(), args.end(), "--deletion-costs") != args.end());
  CHECK(container["env"][0]["name"].as<std::string>() == "POD_NAMESPACE");
  CHECK(container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>() == "metadata.namespace");
  CHECK((*patcher)["rules"][0]["verbs"][0].as<std::string>() == "patch");
  check_binds_service_account(*patcher_binding, *extender);
  // The Lease is in the extender's own namespace, which is where the Role grants it.
  const std::string ns = (*extender)["metadata"]["namespace"].as<std::string>();
  CHECK((*lease_role)["metadata"]["namespace"].as<std::string>() == ns);
  CHECK((*lease_role)["rules"][0]["resources"][0].as<std::string>() == "leases");
  std::set<std::string> verbs;
  for (const auto& v : (*lease_role)["rules"][0]["verbs"]) verbs.insert(v.as<std::string>());
  CHECK(verbs == std::set<std::string>{"get", "create", "update"});
  check_binds_service_account(*lease_binding, *extender);
  // With an API server to talk to: the writer needs one.
  test_support::FakeApiServer api;
  check_binary_accepts(args, api.extender_args());
}

TEST_CASE("deploy: the kube-prometheus-stack overlay labels the ServiceMonitor for the chart's selector") {
  const auto docs = rendered_manifests("overlays/kube-prometheus-stack");
  const YAML::Node* monitor = find(docs, "ServiceMonitor", "gpu-extender");
  const YAML::Node* dashboard = find(docs, "ConfigMap", "gpu-extender-dashboard");
  REQUIRE((monitor && dashboard));
  CHECK((*monitor)["metadata"]["labels"]["release"].as<std::string>() == "kube-prometheus-stack");
  CHECK((*dashboard)["metadata"]["labels"]["grafana_dashboard"].as<std::string>() == "1");
  // It scrapes a port the base Service has, and selects that Service.
  const auto base = rendered_manifests();
  const YAML::Node* service = find(base, "Service", "gpu-extender");
  REQUIRE(service);
  const std::string port = (*monitor)["spec"]["endpoints"][0]["port"].as<std::string>();
  bool has_port = false;
  for (const auto& p : (*service)["spec"]["ports"]) has_port |= p["name"].as<std::string>() == port;
  CHECK(has_port);
  for (const auto& kv : (*monitor)["spec"]["selector"]["matchLabels"])
    CHECK((*service)["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>() == kv.second.as<std::string>());
}
