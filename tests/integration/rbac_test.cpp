// Least privilege, checked both ways: the real binary runs with each feature that reaches the API
// server (or hands its token on), with the args of the rendered file that turns it on, against the fake
// API server, which records every call. Each call becomes the RBAC request the API server would
// authorize (API group, resource[/subresource], verb, namespace, name), and then, for every rendered
// file (manifests/gpu-extender.yaml and manifests/examples/*.yaml):
// (a) each call of the features the file turns on is granted to the extender's service account there;
// (b) each (group, resource, verb[, name]) of each rule bound to that account is used by such a call.
// The second scheduler's rules are upstream's (scheduler-rbac.yaml); only their leases are checked, in
// rbac_scheduler_lease_test.cpp.
#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "../unit/test_support.h"
#include "deploy_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "http_support.h"
#include "rbac_support.h"

using nlohmann::json;
using test_support::eventually;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;
using namespace deploy_support;
using namespace rbac_support;

namespace {

constexpr auto kPatience = std::chrono::seconds(20);

// The features that reach the API server, each run apart so that its calls are known as its own.
enum class Feature { kWatchAndBind, kGpuShare, kDeletionCosts, kDcgm, kGroupPreemption };
const char* name_of(Feature f) {
  switch (f) {
    case Feature::kWatchAndBind: return "watch and bind";
    case Feature::kGpuShare: return "GPU sharing";
    case Feature::kDeletionCosts: return "deletion costs";
    case Feature::kDcgm: return "DCGM through Prometheus";
    case Feature::kGroupPreemption: return "group preemption";
  }
  return "?";
}

// What a rendered file turns on: the watch and /bind always; GPU sharing when its scheduler sends pods
// asking shared GPU memory to the extender (without gpushare's device plugin no node offers that memory,
// so no such pod ever reaches /bind); deletion costs and DCGM by the Deployment's flags; group
// preemption unless they turn it off.
std::set<Feature> features_of(const std::vector<YAML::Node>& docs) {
  std::set<Feature> out{Feature::kWatchAndBind, Feature::kGroupPreemption};
  const YAML::Node* deployment = named(docs, "Deployment", "gpu-extender");
  REQUIRE(deployment);
  for (const std::string& a : container_args(extender_container(*deployment))) {
    if (a == "--deletion-costs") out.insert(Feature::kDeletionCosts);
    if (a == "--no-group-preemption") out.erase(Feature::kGroupPreemption);
    if (a.rfind("--prometheus-url=", 0) == 0) out.insert(Feature::kDcgm);
  }
  if (const YAML::Node* config_map = named(docs, "ConfigMap", "gpu-scheduler-config")) {
    const YAML::Node config = YAML::Load((*config_map)["data"]["config.yaml"].as<std::string>());
    for (const auto& r : config["extenders"][0]["managedResources"])
      if (r["name"].as<std::string>() == "aliyun.com/gpu-mem") out.insert(Feature::kGpuShare);
  }
  return out;
}

// The extender container's args of a rendered file, as a test runs them: ExtenderProcess picks the
// address and port, probes and metrics stay on that port, no TLS or webhook (they call no API), and
// --prometheus-url is replaced by `prometheus` when given.
std::vector<std::string> rendered_args(const std::string& example, const std::string& prometheus = "") {
  const auto docs = rendered_manifests(example);
  const YAML::Node* deployment = named(docs, "Deployment", "gpu-extender");
  REQUIRE(deployment);
  std::vector<std::string> out;
  for (const std::string& a : container_args(extender_container(*deployment))) {
    bool dropped = false;
    for (const char* p : {"--address=", "--port=", "--metrics-port=", "--tls-", "--webhook-port=", "--policy="})
      dropped |= a.rfind(p, 0) == 0;
    if (a.rfind("--prometheus-url=", 0) == 0) {
      REQUIRE(!prometheus.empty());
      out.push_back("--prometheus-url=" + prometheus);
    } else if (!dropped) {
      out.push_back(a);
    }
  }
  return out;
}

// Prometheus behind kube-rbac-proxy, as OpenShift's Thanos querier is: it answers instant queries and
// keeps each query's bearer token. kube-rbac-proxy lets a token through when a SubjectAccessReview for
// its account allows get on namespaces (README, "Live GPU utilisation from DCGM").
class ProxiedPrometheus {
 public:
  ProxiedPrometheus() {
    server_.Get("/api/v1/query", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(mutex_);
        tokens_.push_back(req.get_header_value("Authorization"));
      }
      res.set_content(R"({"status":"success","data":{"resultType":"vector","result":[]}})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~ProxiedPrometheus() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> tokens() const {
    std::lock_guard lock(mutex_);
    return tokens_;
  }

 private:
  httplib::Server server_;
  mutable std::mutex mutex_;
  std::vector<std::string> tokens_;
  int port_ = 0;
  std::thread thread_;
};

json gpu_node(const std::string& name) {
  json node = test_support::make_node(name, "A100", 8);
  for (const char* part : {"capacity", "allocatable"}) {  // gpushare's device plugin: 4 GPUs of 16 GiB
    node["status"][part]["aliyun.com/gpu-mem"] = "64";
    node["status"][part]["aliyun.com/gpu-count"] = "4";
  }
  return node;
}

// What the DRA reflectors list and watch: the group is served once it holds an object.
void put_dra_objects(FakeApiServer& api) {
  api.put_resource_slice({{"apiVersion", "resource.k8s.io/v1"},
                          {"kind", "ResourceSlice"},
                          {"metadata", {{"name", "node-a-gpu.nvidia.com-x7k2p"}}},
                          {"spec",
                           {{"driver", "gpu.nvidia.com"},
                            {"pool", {{"name", "node-a"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                            {"nodeName", "node-a"},
                            {"devices", json::array()}}}});
  const json requests = {{"devices", {{"requests", {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}}}}}}};
  api.put_resource_claim({{"apiVersion", "resource.k8s.io/v1"},
                          {"kind", "ResourceClaim"},
                          {"metadata", {{"name", "claim"}, {"namespace", "ml"}, {"uid", "uid-claim"}}},
                          {"spec", requests}});
  api.put_resource_claim_template({{"apiVersion", "resource.k8s.io/v1"},
                                   {"kind", "ResourceClaimTemplate"},
                                   {"metadata", {{"name", "template"}, {"namespace", "ml"}, {"uid", "uid-template"}}},
                                   {"spec", {{"spec", requests}}}});
}

std::string bind(ExtenderProcess& p, const std::string& name, const std::string& node) {
  const json args = {{"PodName", name}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + name}, {"Node", node}};
  auto res = test_support::post(p, "/bind", args.dump());
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return json::parse(res->body).value("Error", "");
}

int watches_started(FakeApiServer& api) {
  int n = 0;
  for (const char* r : {"pods", "nodes", "resourceslices", "resourceclaims", "resourceclaimtemplates", "devicetaintrules"})
    n += api.watch_requests(r);
  return n;
}

// Runs the real binary with `feature` on, drives it until it has made each of that feature's calls,
// stops it, and answers the calls as RBAC requests.
std::set<Access> calls_of(Feature feature) {
  INFO(name_of(feature));
  FakeApiServer api;
  api.put_node(gpu_node("node-a"));
  api.put_pod(test_support::make_pod("ml", "running", "uid-running", "node-a", 2));
  put_dra_objects(api);
  std::set<Access> out;
  std::vector<std::string> args = api.extender_args();
  const std::string token_file = args[3];  // --kube-token-file's: the service account's token
  std::unique_ptr<ProxiedPrometheus> prometheus;
  std::vector<std::string> own;
  switch (feature) {
    case Feature::kWatchAndBind: own = rendered_args(""); break;
    case Feature::kGroupPreemption:
      // Its evictions are made by the holder of the writers' Lease, in the extender's own namespace.
      own = rendered_args("");
      for (const char* a : {"--leader-elect-namespace=gpu-extender", "--leader-elect-retry-period-seconds=1",
                            "--leader-elect-renew-deadline-seconds=2", "--leader-elect-lease-duration-seconds=3"})
        own.push_back(a);
      break;
    case Feature::kGpuShare: own = rendered_args("gpu-share"); break;
    case Feature::kDeletionCosts:
      // The Deployment's POD_NAMESPACE is its own namespace, gpu-extender; quicker renewals than deployed.
      own = rendered_args("deletion-costs");
      for (const char* a : {"--leader-elect-namespace=gpu-extender", "--leader-elect-retry-period-seconds=1",
                            "--leader-elect-renew-deadline-seconds=2", "--leader-elect-lease-duration-seconds=3"})
        own.push_back(a);
      break;
    case Feature::kDcgm:
      prometheus = std::make_unique<ProxiedPrometheus>();
      own = rendered_args("gpu-operator-dcgm", prometheus->url());
      own.push_back("--prometheus-token-file=" + token_file);  // through extender.extraArgs, as the README says
      own.push_back("--prometheus-period-seconds=1");
      break;
  }
  args.insert(args.end(), own.begin(), own.end());
  {
    ExtenderProcess p(args);
    REQUIRE(test_support::becomes_ready(p));
    REQUIRE(eventually([&] { return watches_started(api) >= 5; }, kPatience));  // every reflector watches
    switch (feature) {
      case Feature::kWatchAndBind:
        // A pod this replica never filtered: /bind reads it, then posts the Binding.
        api.put_pod(test_support::make_pod("ml", "trainer", "uid-trainer", "", 1, 0, "Pending"));
        CHECK(bind(p, "trainer", "node-a").empty());
        break;
      case Feature::kGpuShare: {
        json pod = test_support::make_pod("ml", "infer", "uid-infer", "", 0, 0, "Pending");
        pod["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = "4";
        api.put_pod(pod);
        CHECK(bind(p, "infer", "node-a").empty());  // the device's annotations patched in, then bound
        CHECK(api.patches() >= 1);
        break;
      }
      case Feature::kDeletionCosts:
        // Created, renewed (read, then written back), and a pod's cost patched.
        REQUIRE(eventually([&] {
          const auto calls = api.traffic().calls;
          return api.patches() >= 1 &&
                 calls.count("PUT /apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases/gpu-extender-deletion-costs");
        }, kPatience));
        break;
      case Feature::kDcgm:
        REQUIRE(eventually([&] { return !prometheus->tokens().empty(); }, kPatience));
        break;
      case Feature::kGroupPreemption: {
        // A group of one 8-GPU pod at priority 1000 that fits nowhere: "running" (2 GPUs, priority 0)
        // is evicted from node-a, dry run then for real, with an event.
        json member = test_support::make_pod("ml", "trainer", "uid-trainer", "", 8, 0, "Pending");
        member["spec"]["priority"] = 1000;
        member["metadata"]["annotations"]["gpu.nvidia.com/group"] = "train";
        member["metadata"]["annotations"]["gpu.nvidia.com/group-size"] = "1";
        test_support::post(p, "/filter", json({{"Pod", member}, {"Nodes", nullptr}, {"NodeNames", {"node-a"}}}).dump());
        REQUIRE(eventually([&] { return !api.posted_events().empty(); }, kPatience));
        break;
      }
    }
    CHECK(p.stop() == 0);
  }
  // A watch is recorded when its stream ends: end those the fake still holds open.
  api.drop_watches();
  REQUIRE(eventually([&] {
    int ended = 0;
    for (const auto& [call, n] : api.traffic().calls)
      if (call.size() > 6 && call.compare(call.size() - 6, 6, " watch") == 0) ended += static_cast<int>(n);
    return ended >= watches_started(api);
  }, kPatience));
  for (const auto& [call, n] : api.traffic().calls) out.insert(access_of(call));
  if (prometheus) {
    // Every query carried the token; kube-rbac-proxy authorizes it as this request.
    for (const std::string& t : prometheus->tokens()) CHECK(t == "Bearer test-token");
    out.insert({"", "namespaces", "get", "", ""});
  }
  return out;
}

std::string list(const std::set<Access>& accesses) {
  std::string out;
  for (const Access& a : accesses) out += "\n  " + a.describe();
  return out;
}

}  // namespace

TEST_CASE("rbac: the extender's rendered grants are exactly the API calls the binary makes, both ways") {
  std::map<Feature, std::set<Access>> calls;
  for (Feature f : {Feature::kWatchAndBind, Feature::kGpuShare, Feature::kDeletionCosts, Feature::kDcgm,
                    Feature::kGroupPreemption})
    calls[f] = calls_of(f);
  // What each feature calls, as the code reads (src/kube): the reflectors' list and watch of pods, nodes
  // and the DRA kinds, /bind's get of a pod and create of its binding; the patch of a pod's annotations;
  // the deletion-cost Lease; no call to the API server for DCGM, only the token kube-rbac-proxy checks.
  INFO("watch and bind:" << list(calls[Feature::kWatchAndBind]));
  CHECK(calls[Feature::kWatchAndBind].count({"", "pods/binding", "create", "ml", "trainer"}));
  CHECK(calls[Feature::kWatchAndBind].count({"", "pods", "get", "ml", "trainer"}));
  CHECK(calls[Feature::kWatchAndBind].count({"resource.k8s.io", "resourceclaimtemplates", "watch", "", ""}));
  CHECK(calls[Feature::kWatchAndBind].count({"resource.k8s.io", "devicetaintrules", "watch", "", ""}));
  CHECK(calls[Feature::kGpuShare].count({"", "pods", "patch", "ml", "infer"}));
  for (const char* verb : {"get", "update"})
    CHECK(calls[Feature::kDeletionCosts].count({"coordination.k8s.io", "leases", verb, "gpu-extender", "gpu-extender-deletion-costs"}));
  CHECK(calls[Feature::kDeletionCosts].count({"coordination.k8s.io", "leases", "create", "gpu-extender", ""}));
  CHECK(calls[Feature::kGroupPreemption].count({"", "pods/eviction", "create", "ml", "running"}));
  CHECK(calls[Feature::kGroupPreemption].count({"", "events", "create", "ml", ""}));
  CHECK(calls[Feature::kGroupPreemption].count({"coordination.k8s.io", "leases", "create", "gpu-extender", ""}));

  std::vector<std::string> files{""};
  for (const char* example : {"cert-manager", "custom-policy", "deletion-costs", "dra-claims", "eks-auto-mode", "eks-karpenter",
                              "extender-only", "full-mode-groups", "gke", "gpu-operator-dcgm", "gpu-operator-mig",
                              "gpu-share", "topology"})
    files.push_back(example);
  std::set<Feature> seen;
  for (const std::string& file : files) {
    INFO((file.empty() ? "manifests/gpu-extender.yaml" : "manifests/examples/" + file + ".yaml"));
    const auto docs = rendered_manifests(file);
    const YAML::Node* deployment = named(docs, "Deployment", "gpu-extender");
    REQUIRE(deployment);
    std::set<std::string> elsewhere;
    const std::vector<Grant> grants = grants_of(docs, *deployment, elsewhere);
    CHECK(elsewhere.empty());  // every rule of the extender's is in the file
    std::set<Access> used;
    for (Feature f : features_of(docs)) {
      seen.insert(f);
      used.insert(calls[f].begin(), calls[f].end());
    }
    // (a) Every call is granted.
    for (const Access& a : used) {
      INFO("call: " << a.describe());
      CHECK(std::any_of(grants.begin(), grants.end(), [&](const Grant& g) { return allows(g, a); }));
    }
    // (b) Every grant is used: each group x resource x verb (x name) of each rule by some call.
    for (const Grant& g : grants)
      for (const auto& group : g.rule["apiGroups"])
        for (const auto& resource : g.rule["resources"])
          for (const auto& verb : g.rule["verbs"]) {
            std::vector<std::string> names;
            for (const auto& n : g.rule["resourceNames"]) names.push_back(n.as<std::string>());
            if (names.empty()) names.push_back("");
            for (const std::string& name : names) {
              const std::string what = verb.as<std::string>() + " " + group.as<std::string>() + "/" +
                                       resource.as<std::string>() + (name.empty() ? "" : " " + name);
              INFO(g.from << " grants " << what << (g.scope.empty() ? "" : " in " + g.scope) << "; calls:" << list(used));
              CHECK(std::any_of(used.begin(), used.end(), [&](const Access& a) {
                return a.group == group.as<std::string>() && a.resource == resource.as<std::string>() &&
                       a.verb == verb.as<std::string>() && (name.empty() || a.name == name) &&
                       (g.scope.empty() || a.ns == g.scope);
              }));
            }
          }
  }
  CHECK(seen.size() == 5);  // each feature's calls were checked against some file
}

