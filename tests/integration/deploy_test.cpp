// What the chart installs (manifests/gpu-extender.yaml, rendered from charts/gpu-extender with its
// defaults and TLS off, and the examples), checked object by object: shape, security, probes and verbs
// against the real binary, and the scheduler's urlPrefix against the Service.
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

namespace {
// The Kubernetes releases the e2e suite runs, oldest first ("1.34.4").
std::vector<std::string> e2e_versions() {
  std::ifstream in(test_support::source_path("tests/e2e/controlplane/versions"));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.push_back(line);
  return out;
}
int minor_of(const std::string& version) {  // "1.37.2" -> 37
  const size_t dot = version.find('.');
  return std::stoi(version.substr(dot + 1));
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
  // Exactly what the code uses (rbac_test.cpp runs the binary to check it): the reflectors' list/watch of
  // pods, nodes, ResourceSlices, ResourceClaims, ResourceClaimTemplates and DeviceTaintRules (group resource.k8s.io), the
  // binder's GET of a pod and POST of pods/binding (src/kube/api_binder.cpp); group preemption's
  // evictions and the Preempted event on each victim (src/kube/api_evictor.cpp).
  std::set<std::string> granted;
  for (const auto& rule : (*role)["rules"])
    for (const auto& resource : rule["resources"])
      for (const auto& verb : rule["verbs"]) granted.insert(resource.as<std::string>() + ":" + verb.as<std::string>());
  CHECK(granted == std::set<std::string>{"pods:get", "pods:list", "pods:watch", "nodes:list", "nodes:watch",
                                         "resourceslices:list", "resourceslices:watch", "resourceclaims:list",
                                         "resourceclaims:watch", "resourceclaimtemplates:list",
                                         "resourceclaimtemplates:watch", "devicetaintrules:list", "pods/eviction:create", "events:create",
                                         "devicetaintrules:watch", "pods/binding:create"});
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

  // No policy is mounted by default: the binary's embedded one is extender-config/policy.yaml.
  CHECK(arg_value(container, "policy").empty());
  CHECK_FALSE(find(docs, "ConfigMap", "gpu-extender-policy"));
  std::vector<std::string> args;
  // The container's named ports, as the test runs them: the verbs on the port ExtenderProcess picks,
  // the metrics port on a free one of ours.
  const int metrics_port = test_support::free_port();
  bool has_metrics_port = false;
  for (std::string a : container_args(container)) {
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
}

TEST_CASE("deploy: a policy of the user's own is mounted from its ConfigMap and loads in the real binary") {
  for (const auto& [example, scorers] : std::map<std::string, std::string>{{"custom-policy", "scorers: 1"}, {"topology", "scorers: 4"}, {"gpu-operator-mig", "scorers: 4"}}) {
    INFO(example);
    const auto docs = rendered_manifests(example);
    const YAML::Node* deployment = find(docs, "Deployment", "gpu-extender");
    const YAML::Node* policy_map = find(docs, "ConfigMap", "gpu-extender-policy");
    REQUIRE((deployment && policy_map));
    const YAML::Node pod = (*deployment)["spec"]["template"]["spec"];
    const YAML::Node container = extender_container(*deployment);
    const std::string path = arg_value(container, "policy");
    REQUIRE(!path.empty());
    bool mounted = false;  // the volume mounted where --policy points is the ConfigMap
    for (const auto& mount : container["volumeMounts"])
      if (path.rfind(mount["mountPath"].as<std::string>() + "/", 0) == 0)
        for (const auto& volume : pod["volumes"])
          mounted |= volume["name"].as<std::string>() == mount["name"].as<std::string>() && volume["configMap"] &&
                     volume["configMap"]["name"].as<std::string>() == "gpu-extender-policy";
    CHECK(mounted);
    const std::string policy_file = "/tmp/gpu-extender-deployed-policy-" + std::to_string(getpid()) + ".yaml";
    std::ofstream(policy_file) << (*policy_map)["data"]["policy.yaml"].as<std::string>();
    const auto dry_run = test_support::run_binary({"--check-config", "--policy=" + policy_file});
    INFO(dry_run.output);
    CHECK(dry_run.exit_code == 0);
    CHECK(dry_run.output.find(scorers) != std::string::npos);  // the example's own scorers, or the default's
    std::remove(policy_file.c_str());
  }
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
  // The second scheduler is a release the e2e suite runs (tests/e2e/controlplane/versions, oldest to newest).
  const std::string image = scheduler_pod["containers"][0]["image"].as<std::string>();
  const std::string prefix = "registry.k8s.io/kube-scheduler:v";
  REQUIRE(image.rfind(prefix, 0) == 0);
  const std::vector<std::string> tested = e2e_versions();
  REQUIRE(tested.size() >= 2);
  INFO(image);
  CHECK(minor_of(image.substr(prefix.size())) >= minor_of(tested.front()));
  CHECK(minor_of(image.substr(prefix.size())) <= minor_of(tested.back()));
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
  for (const char* example : {"", "full-mode-groups", "cert-manager", "gpu-share", "dra-claims"}) {
    INFO(example);
    const auto docs = rendered_manifests(example);
    const YAML::Node* config_map = find(docs, "ConfigMap", "gpu-scheduler-config");
    REQUIRE(config_map);
    const YAML::Node config = YAML::Load((*config_map)["data"]["config.yaml"].as<std::string>());
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
    if (std::string(example) == "gpu-share") expected.insert("aliyun.com/gpu-mem");
    // The DRA-claims variant names none: kube-scheduler cannot see claims when it chooses whom to call.
    if (std::string(example) == "dra-claims") expected.clear();
    CHECK(managed == expected);
    // Full-node mode has no node cache, so no preemption; the others have both.
    CHECK(ext["nodeCacheCapable"].as<bool>() == static_cast<bool>(ext["preemptVerb"]));
    CHECK(ext["enableHTTPS"].IsDefined() == (std::string(example) == "cert-manager"));
  }
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
  const auto monitored = rendered_manifests("gpu-operator-dcgm");
  const YAML::Node* monitor = find(monitored, "ServiceMonitor", "gpu-extender");
  REQUIRE(monitor);
  CHECK((*monitor)["spec"]["endpoints"][0]["port"].as<std::string>() == "metrics");
}


