// Pod deletion costs kept by the real binary against the fake API server: costs follow how full the
// nodes are, change when pods come and go, never overwrite a cost someone else set, are not rewritten
// after a restart, and only the replica holding the Lease writes (another takes over when it stops).
#include <catch2/catch.hpp>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "lease_support.h"
#include "metrics_support.h"

using nlohmann::json;
using test_support::eventually;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;
using test_support::make_node;
using test_support::make_pod;

namespace {

constexpr auto kPatience = std::chrono::seconds(20);

std::string cost_of(FakeApiServer& api, const std::string& name) {
  const json pod = api.pod("ml", name);
  const json annotations = pod["metadata"].value("annotations", json::object());
  return annotations.value("controller.kubernetes.io/pod-deletion-cost", "");
}

void put_gpu_pods(FakeApiServer& api, const std::string& node, int from, int count) {
  for (int i = from; i < from + count; ++i)
    api.put_pod(make_pod("ml", node + "-" + std::to_string(i), "uid-" + node + "-" + std::to_string(i), node, 1));
}

std::vector<std::string> cost_args(FakeApiServer& api) {
  std::vector<std::string> args = api.extender_args();
  for (const char* a : {"--deletion-costs", "--deletion-cost-qps", "50", "--leader-elect-namespace", "gpu-extender",
                        "--leader-elect-lease-duration-seconds", "3", "--leader-elect-renew-deadline-seconds", "2",
                        "--leader-elect-retry-period-seconds", "1"})
    args.push_back(a);
  return args;
}

double leader_gauge(const ExtenderProcess& p) {
  return test_support::value_of(test_support::scrape(p.port()), "gpu_extender_deletion_cost_leader");
}

double passes_of(const ExtenderProcess& p) {
  return test_support::value_of(test_support::scrape(p.port()), "gpu_extender_deletion_cost_passes_total");
}


}  // namespace

TEST_CASE("deletion costs: follow the nodes' fullness, leave others' costs alone, survive a restart") {
  FakeApiServer api;
  for (const char* n : {"node-a", "node-b", "node-c"}) api.put_node(make_node(n, "A100", 8));
  put_gpu_pods(api, "node-a", 0, 8);  // full: 1000
  put_gpu_pods(api, "node-b", 0, 2);  // a quarter: 200
  json user_set = make_pod("ml", "user-set", "uid-user-set", "node-c", 1);
  user_set["metadata"]["annotations"] = {{"controller.kubernetes.io/pod-deletion-cost", "-5"}};
  api.put_pod(user_set);
  json other = make_pod("ml", "other-scheduler", "uid-other", "node-c", 1);
  other["spec"]["schedulerName"] = "default-scheduler";
  api.put_pod(other);

  {
    ExtenderProcess p(cost_args(api));
    // Every pod's patch, not just some: the writer's order among pods is its own (waiting for two of
    // them let a fresh-clone run read node-b-0 before its patch).
    REQUIRE(eventually([&] {
      for (int i = 0; i < 8; ++i)
        if (cost_of(api, "node-a-" + std::to_string(i)) != "1000") return false;
      return cost_of(api, "node-b-0") == "200" && cost_of(api, "node-b-1") == "200";
    }, kPatience));
    const json written = api.pod("ml", "node-b-0")["metadata"]["annotations"];
    CHECK(written["gpu.nvidia.com/deletion-cost-written"] == "200");
    CHECK(cost_of(api, "user-set") == "-5");
    CHECK_FALSE(api.pod("ml", "user-set")["metadata"]["annotations"].contains("gpu.nvidia.com/deletion-cost-written"));
    CHECK(cost_of(api, "other-scheduler").empty());

    // Pods come to node-b (half full: 500) and leave node-a (3 of 8: 300).
    put_gpu_pods(api, "node-b", 2, 2);
    for (int i = 3; i < 8; ++i) api.delete_pod("ml", "node-a-" + std::to_string(i));
    REQUIRE(eventually([&] { return cost_of(api, "node-b-0") == "500" && cost_of(api, "node-b-3") == "500"; }, kPatience));
    REQUIRE(eventually([&] { return cost_of(api, "node-a-0") == "300"; }, kPatience));

    const auto metrics = test_support::scrape(p.port());
    CHECK(test_support::value_of(metrics, "gpu_extender_deletion_cost_leader") == 1);
    CHECK(test_support::value_of(metrics, "gpu_extender_deletion_cost_patches_total{outcome=\"written\"}") >= 14);
    CHECK(test_support::value_of(metrics, "gpu_extender_deletion_cost_user_owned_pods") == 1);
    REQUIRE(eventually([&] {
      const auto m = test_support::scrape(p.port());
      return test_support::value_of(m, "gpu_extender_deletion_cost_pods{bucket=\"5\"}") == 4 &&
             test_support::value_of(m, "gpu_extender_deletion_cost_pods{bucket=\"3\"}") == 3;
    }, kPatience));
  }
  // A restart: the new process reads the costs through its watch and patches nothing.
  const int patches_before = api.patches();
  ExtenderProcess again(cost_args(api));
  REQUIRE(eventually([&] { return leader_gauge(again) == 1; }, kPatience));
  // Two whole passes of the new leader, each of which would have patched a cost it found wrong.
  REQUIRE(eventually([&] { return passes_of(again) >= 2; }, kPatience));
  CHECK(api.patches() == patches_before);
}

TEST_CASE("deletion costs: one writer among replicas, and when it stops the other takes over and writes") {
  FakeApiServer api;
  api.put_node(make_node("node-a", "A100", 8));
  put_gpu_pods(api, "node-a", 0, 2);
  auto first = std::make_unique<ExtenderProcess>(cost_args(api));
  REQUIRE(eventually([&] { return leader_gauge(*first) == 1; }, kPatience));
  ExtenderProcess second(cost_args(api));
  REQUIRE(eventually([&] { return cost_of(api, "node-a-1") == "200"; }, kPatience));
  // The second replica is up and watching, and stays a follower while the first renews: for as long
  // as the first has held the lease past its duration (its own renewals say so), and through two of
  // its passes.
  const double taken = passes_of(*first);
  REQUIRE(eventually([&] { return test_support::renewed_past_duration(api, "gpu-extender", "gpu-extender-deletion-costs") && passes_of(*first) >= taken + 2; }, kPatience));
  CHECK(leader_gauge(*first) == 1);
  CHECK(leader_gauge(second) == 0);
  CHECK(test_support::value_of(test_support::scrape(second.port()),
                               "gpu_extender_deletion_cost_patches_total{outcome=\"written\"}") == 0);

  first.reset();  // SIGTERM: it stops writing and releases the lease
  REQUIRE(eventually([&] { return leader_gauge(second) == 1; }, kPatience));
  CHECK(api.lease("gpu-extender", "gpu-extender-deletion-costs")["spec"]["leaseTransitions"] == 0);  // released, not expired
  put_gpu_pods(api, "node-a", 2, 2);  // the new leader keeps costs: 4 of 8
  CHECK(eventually([&] { return cost_of(api, "node-a-0") == "500"; }, kPatience));
}
