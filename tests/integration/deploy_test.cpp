// What `kubectl apply -k manifests/` would install, rendered with kubectl kustomize and checked object by
// object: shape, security, probes and verbs against the real binary, and the scheduler's urlPrefix
// against the Service.
#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"

using test_support::ExtenderProcess;

namespace {

// What `kubectl apply -k DIR` would install (DIR relative to the source tree: the base, or an overlay).
std::vector<YAML::Node> rendered_manifests(const std::string& dir = "manifests") {
  const std::string cmd = "kubectl kustomize " + test_support::source_path(dir) + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int rc = pclose(pipe);
  INFO(out);
  REQUIRE(rc == 0);  // kubectl (with kustomize) is part of the machine image
  return YAML::LoadAll(out);
}

const YAML::Node* find(const std::vector<YAML::Node>& docs, const std::string& kind, const std::string& name_prefix) {
  for (const auto& d : docs)
    if (d["kind"].as<std::string>() == kind && d["metadata"]["name"].as<std::string>().rfind(name_prefix, 0) == 0)
      return &d;
  return nullptr;
}

// Every label a selector's matchLabels asks for is on the Deployment's pods.
void check_selects(const YAML::Node& match_labels, const YAML::Node& deployment) {
  for (const auto& kv : match_labels)
    CHECK(deployment["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>() ==
          kv.second.as<std::string>());
}

// A ClusterRoleBinding grants its role to the service account a Deployment's pods run as.
void check_binds_service_account(const YAML::Node& binding, const YAML::Node& deployment) {
  CHECK(binding["subjects"][0]["kind"].as<std::string>() == "ServiceAccount");
  CHECK(binding["subjects"][0]["name"].as<std::string>() ==
        deployment["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>());
  CHECK(binding["subjects"][0]["namespace"].as<std::string>() == deployment["metadata"]["namespace"].as<std::string>());
}

// The real binary takes a container's args (`--check-config` dry run), `extra` added. Its --policy is
// dropped: the embedded policy is the ConfigMap's, which the tests check apart.
void check_binary_accepts(const std::vector<std::string>& args, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> dry{"--check-config"};
  for (const std::string& a : args)
    if (a.rfind("--policy=", 0) != 0) dry.push_back(a);
  dry.insert(dry.end(), extra.begin(), extra.end());
  const auto dry_run = test_support::run_binary(dry);
  INFO(dry_run.output);
  CHECK(dry_run.exit_code == 0);
}

std::vector<std::string> container_args(const YAML::Node& container) {
  std::vector<std::string> args;
  for (const auto& a : container["args"]) args.push_back(a.as<std::string>());
  return args;
}

}  // namespace

TEST_CASE("deploy: every object is well-formed, every container bounded and locked down") {
  const auto docs = rendered_manifests();
  REQUIRE(docs.size() >= 14);
  for (const auto& d : docs) {
    INFO(YAML::Dump(d).substr(0, 200));
    CHECK(d["apiVersion"]);
    CHECK(d["kind"]);
    CHECK(!d["metadata"]["name"].as<std::string>().empty());
    if (d["kind"].as<std::string>() != "Deployment") continue;
    const YAML::Node pod = d["spec"]["template"]["spec"];
    CHECK(pod["securityContext"]["runAsNonRoot"].as<bool>());
    CHECK(pod["securityContext"]["seccompProfile"]["type"].as<std::string>() == "RuntimeDefault");
    for (const auto& c : pod["containers"]) {
      INFO(c["name"].as<std::string>());
      CHECK(c["resources"]["requests"]["cpu"]);
      CHECK(c["resources"]["requests"]["memory"]);
      CHECK(c["resources"]["limits"]["memory"]);
      CHECK_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>());
      CHECK(c["securityContext"]["readOnlyRootFilesystem"].as<bool>());
      CHECK(c["securityContext"]["capabilities"]["drop"][0].as<std::string>() == "ALL");
      CHECK(c["livenessProbe"]);
      CHECK(c["readinessProbe"]);
    }
  }
  const YAML::Node* role = find(docs, "ClusterRole", "gpu-extender");
  REQUIRE(role);
  // Exactly what the code uses: the reflectors' get/list/watch of pods and nodes, Binder's POST of
  // pods/binding (src/kube/api_binder.cpp). No events: the extender records none.
  std::set<std::string> granted;
  for (const auto& rule : (*role)["rules"])
    for (const auto& resource : rule["resources"])
      for (const auto& verb : rule["verbs"]) granted.insert(resource.as<std::string>() + ":" + verb.as<std::string>());
  CHECK(granted == std::set<std::string>{"pods:get", "pods:list", "pods:watch", "nodes:get", "nodes:list",
                                         "nodes:watch", "pods/binding:create"});
  const YAML::Node* auth = find(docs, "RoleBinding", "gpu-scheduler-extension-apiserver-authentication-reader");
  REQUIRE(auth);
  CHECK((*auth)["metadata"]["namespace"].as<std::string>() == "kube-system");
}

TEST_CASE("deploy: the extender's args, probes and policy work with the real binary") {
  const auto docs = rendered_manifests();
  const YAML::Node* deployment = find(docs, "Deployment", "gpu-extender");
  REQUIRE(deployment);
  const YAML::Node pod = (*deployment)["spec"]["template"]["spec"];
  CHECK((*deployment)["spec"]["replicas"].as<int>() == 2);
  const YAML::Node container = pod["containers"][0];

  // The policy the ConfigMap mounts, at a path of our own: the container's args load it.
  const YAML::Node* policy_map = find(docs, "ConfigMap", "gpu-extender-policy");
  REQUIRE(policy_map);
  CHECK(pod["volumes"][0]["configMap"]["name"].as<std::string>() == (*policy_map)["metadata"]["name"].as<std::string>());
  const std::string policy_text = (*policy_map)["data"]["policy.yaml"].as<std::string>();
  CHECK(policy_text == test_support::read_file(test_support::source_path("extender-config/policy.yaml")));
  const std::string policy_file = "/tmp/gpu-extender-deployed-policy-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(policy_file) << policy_text;
  std::vector<std::string> args;
  // The container's named ports, as the test runs them: the verbs on the port ExtenderProcess picks,
  // the metrics port on a free one of ours.
  const int metrics_port = test_support::free_port();
  bool has_metrics_port = false;
  for (std::string a : container_args(container)) {
    if (a.rfind("--policy=", 0) == 0) a = "--policy=" + policy_file;
    if (a.rfind("--port=", 0) == 0 || a.rfind("--address=", 0) == 0) continue;  // the test picks its own
    if (a.rfind("--metrics-port=", 0) == 0) {
      has_metrics_port = true;
      a = "--metrics-port=" + std::to_string(metrics_port);
    }
    args.push_back(a);
  }
  CHECK(has_metrics_port);
  std::vector<std::string> check = args;
  check.push_back("--check-config");
  const auto dry_run = test_support::run_binary(check);
  INFO(dry_run.output);
  CHECK(dry_run.exit_code == 0);

  ExtenderProcess p(args);
  std::map<std::string, int> port_of;  // container port name -> where the test's binary serves it
  for (const auto& port : container["ports"]) {
    const std::string name = port["name"].as<std::string>();
    port_of[name] = port["containerPort"].as<std::string>() == "9090" ? metrics_port : p.port();
  }
  CHECK(port_of.count("http") == 1);
  CHECK(port_of.count("metrics") == 1);
  for (const char* probe : {"livenessProbe", "readinessProbe"}) {
    const std::string path = container[probe]["httpGet"]["path"].as<std::string>();
    const std::string port = container[probe]["httpGet"]["port"].as<std::string>();
    REQUIRE(port_of.count(port) == 1);
    httplib::Client client("127.0.0.1", port_of[port]);
    auto res = client.Get(path.c_str());
    REQUIRE(res);
    CHECK(res->status == 200);
  }
  std::remove(policy_file.c_str());
}

TEST_CASE("deploy: the scheduler reaches the extender's Service, with verbs the binary serves") {
  const auto docs = rendered_manifests();
  const YAML::Node* service = find(docs, "Service", "gpu-extender");
  const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
  const YAML::Node* scheduler = find(docs, "Deployment", "gpu-scheduler");
  const YAML::Node* config_map = find(docs, "ConfigMap", "gpu-scheduler-config");
  REQUIRE(service);
  REQUIRE(extender);
  REQUIRE(scheduler);
  REQUIRE(config_map);
  // The Service selects the extender's pods, on the container's named port.
  check_selects((*service)["spec"]["selector"], *extender);
  CHECK((*service)["spec"]["ports"][0]["targetPort"].as<std::string>() ==
        (*extender)["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"].as<std::string>());

  const YAML::Node scheduler_pod = (*scheduler)["spec"]["template"]["spec"];
  CHECK(scheduler_pod["volumes"][0]["configMap"]["name"].as<std::string>() ==
        (*config_map)["metadata"]["name"].as<std::string>());
  CHECK(scheduler_pod["containers"][0]["image"].as<std::string>().rfind("registry.k8s.io/kube-scheduler:v1.29.", 0) == 0);
  const YAML::Node config = YAML::Load((*config_map)["data"]["config.yaml"].as<std::string>());
  CHECK(config["apiVersion"].as<std::string>() == "kubescheduler.config.k8s.io/v1");
  CHECK(config["profiles"][0]["schedulerName"].as<std::string>() == "gpu-scheduler");
  // One scheduler's requests reach one replica (in-flight placements stay in one view), and /bind
  // serves the pods of the scheduler profile that calls it.
  CHECK((*service)["spec"]["sessionAffinity"].as<std::string>() == "ClientIP");
  bool serves_profile = false;
  for (const auto& arg : (*extender)["spec"]["template"]["spec"]["containers"][0]["args"])
    serves_profile |= arg.as<std::string>() == "--scheduler-name=" + config["profiles"][0]["schedulerName"].as<std::string>();
  CHECK(serves_profile);
  CHECK(config["leaderElection"]["resourceName"].as<std::string>() == "gpu-scheduler");
  const YAML::Node ext = config["extenders"][0];
  const std::string expected_url = "http://" + (*service)["metadata"]["name"].as<std::string>() + "." +
                                   (*service)["metadata"]["namespace"].as<std::string>() + ".svc:" +
                                   (*service)["spec"]["ports"][0]["port"].as<std::string>();
  CHECK(ext["urlPrefix"].as<std::string>() == expected_url);
  CHECK_FALSE(ext["ignorable"].as<bool>());

  ExtenderProcess p;
  httplib::Client client("127.0.0.1", p.port());
  for (const char* verb : {"filterVerb", "prioritizeVerb", "bindVerb", "preemptVerb"}) {
    REQUIRE(ext[verb]);
    auto res = client.Post(("/" + ext[verb].as<std::string>()).c_str(), "{}", "application/json");
    REQUIRE(res);
    INFO(verb << " -> " << res->status << " " << res->body);
    CHECK(res->status != 404);  // a route the binary serves (this body is refused as incomplete)
    CHECK(res->status != 405);
  }
}

TEST_CASE("deploy: every scheduler configuration variant is complete") {
  for (const char* file : {"extender-config/scheduler-config-node-cache.yaml", "extender-config/scheduler-config-full-nodes.yaml",
                           "overlays/https/scheduler-config-https.yaml", "overlays/gpu-share/scheduler-config-gpu-share.yaml"}) {
    INFO(file);
    const YAML::Node config = YAML::LoadFile(test_support::source_path(file));
    CHECK(config["kind"].as<std::string>() == "KubeSchedulerConfiguration");
    const YAML::Node ext = config["extenders"][0];
    CHECK(ext["filterVerb"].as<std::string>() == "filter");
    CHECK(ext["prioritizeVerb"].as<std::string>() == "prioritize");
    CHECK(ext["bindVerb"].as<std::string>() == "bind");
    CHECK(ext["weight"].as<int>() > 0);
    CHECK(ext["httpTimeout"]);
    CHECK_FALSE(ext["ignorable"].as<bool>());
    std::set<std::string> managed;
    for (const auto& r : ext["managedResources"]) {
      managed.insert(r["name"].as<std::string>());
      CHECK_FALSE(r["ignoredByScheduler"].as<bool>());
    }
    // The sharing variant adds the shared GPU memory; the others leave it to the default scheduler.
    std::set<std::string> expected{"nvidia.com/gpu", "custom.resource/aaa"};
    if (std::string(file).find("gpu-share") != std::string::npos) expected.insert("aliyun.com/gpu-mem");
    CHECK(managed == expected);
    // Full-node mode has no node cache, so no preemption; the others have both.
    CHECK(ext["nodeCacheCapable"].as<bool>() == static_cast<bool>(ext["preemptVerb"]));
  }
  const YAML::Node https = YAML::LoadFile(test_support::source_path("overlays/https/scheduler-config-https.yaml"));
  CHECK(https["extenders"][0]["enableHTTPS"].as<bool>());
  CHECK(https["extenders"][0]["tlsConfig"]["certFile"]);
}

TEST_CASE("deploy: the NetworkPolicy admits the scheduler to the verbs and monitoring to the metrics") {
  const auto docs = rendered_manifests();
  const YAML::Node* policy = find(docs, "NetworkPolicy", "gpu-extender");
  const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
  const YAML::Node* scheduler = find(docs, "Deployment", "gpu-scheduler");
  REQUIRE(policy);
  REQUIRE(extender);
  REQUIRE(scheduler);
  // It selects the extender's pods and governs their ingress.
  check_selects((*policy)["spec"]["podSelector"]["matchLabels"], *extender);
  CHECK((*policy)["spec"]["policyTypes"][0].as<std::string>() == "Ingress");
  const YAML::Node rules = (*policy)["spec"]["ingress"];
  REQUIRE(rules.size() == 2);
  // The verb port: only pods that carry the scheduler's labels.
  CHECK(rules[0]["ports"][0]["port"].as<std::string>() == "http");
  check_selects(rules[0]["from"][0]["podSelector"]["matchLabels"], *scheduler);
  CHECK_FALSE(rules[0]["from"][0]["namespaceSelector"]);  // this namespace only
  // The metrics port: the monitoring namespace; and the ServiceMonitor scrapes that port.
  CHECK(rules[1]["ports"][0]["port"].as<std::string>() == "metrics");
  CHECK(rules[1]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"].as<std::string>() ==
        "monitoring");
  const YAML::Node monitor = YAML::LoadFile(test_support::source_path("manifests/monitoring/servicemonitor.yaml"));
  CHECK(monitor["spec"]["endpoints"][0]["port"].as<std::string>() == "metrics");
}


namespace {
YAML::Node extender_container(const YAML::Node& deployment) {
  return deployment["spec"]["template"]["spec"]["containers"][0];
}
// The value of --NAME=VALUE among a container's args ("" when absent).
std::string arg_value(const YAML::Node& container, const std::string& name) {
  for (const std::string& a : container_args(container))
    if (a.rfind("--" + name + "=", 0) == 0) return a.substr(name.size() + 3);
  return "";
}
// The mount path of the volume that holds `file`, and that volume's secret name ("" when none).
std::string secret_holding(const YAML::Node& pod_spec, const YAML::Node& container, const std::string& file) {
  for (const auto& mount : container["volumeMounts"]) {
    const std::string dir = mount["mountPath"].as<std::string>();
    if (file.rfind(dir + "/", 0) != 0) continue;
    for (const auto& volume : pod_spec["volumes"])
      if (volume["name"].as<std::string>() == mount["name"].as<std::string>() && volume["secret"])
        return volume["secret"]["secretName"].as<std::string>();
  }
  return "";
}
}  // namespace

TEST_CASE("deploy: the image is named in one place, manifests/kustomization.yaml, for the base and every overlay") {
  const YAML::Node kustomization = YAML::LoadFile(test_support::source_path("manifests/kustomization.yaml"));
  REQUIRE(kustomization["images"].size() == 1);
  const YAML::Node image = kustomization["images"][0];
  const std::string expected = image["newName"].as<std::string>() + ":" + image["newTag"].as<std::string>();
  CHECK(expected.find('/') != std::string::npos);  // a registry path, never a bare name Docker Hub would resolve
  for (const char* dir : {"manifests", "overlays/https", "overlays/gke", "overlays/dcgm-prometheus", "overlays/gpu-share", "overlays/deletion-costs"}) {
    INFO(dir);
    const auto docs = rendered_manifests(dir);
    const YAML::Node* extender = find(docs, "Deployment", "gpu-extender");
    REQUIRE(extender);
    CHECK(extender_container(*extender)["image"].as<std::string>() == expected);
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
