// Group preemption with the real binary against a fake API server: a group that fits no block has room
// made in one by evicting a pod of lower priority (dry run, then the eviction, then a Preempted event),
// its members wait while the victim leaves and are then planned there; a pod its budget protects is
// never evicted; --no-group-preemption evicts nothing.
#include <catch2/catch.hpp>

#include <thread>

#include "kube_support.h"
#include "metrics_support.h"

using nlohmann::json;
using test_support::eventually;
using namespace kube_support;

namespace {

constexpr const char* kLayer3 = "topology.k8s.aws/network-node-layer-3";

// Block a: two 8-GPU nodes, a low-priority pod on a-1; block b: one node, a pod of high priority.
struct Bed {
  FakeApiServer api;
  TempDir dir;
  std::string token_file = dir.file("token", "test-token\n");
  Bed() {
    for (const char* name : {"a-0", "a-1", "b-0"}) {
      json node = make_node(name, "A100", 8);
      node["metadata"]["labels"][kLayer3] = std::string("nn-") + name[0];
      api.put_node(node);
    }
    api.put_pod(bound("low", "a-1", 0));
    api.put_pod(bound("vip", "b-0", 5000));
  }
  static json bound(const std::string& name, const std::string& node, int priority) {
    json pod = make_pod("ml", name, "uid-" + name, node, 8);
    pod["spec"]["priority"] = priority;
    return pod;
  }
  std::vector<std::string> args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a{"--kube-api-server", api.url(), "--kube-token-file", token_file, "--kube-ca-file",
                               test_support::TestCertificate::get().cert_file};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

json member(int i, int priority) {
  json pod = gpu_pod("m-" + std::to_string(i), "uid-m-" + std::to_string(i), 8);
  pod["spec"]["priority"] = priority;
  pod["metadata"]["annotations"]["gpu.nvidia.com/group"] = "train";
  pod["metadata"]["annotations"]["gpu.nvidia.com/group-size"] = "2";
  pod["metadata"]["annotations"]["gpu.nvidia.com/required-topology"] = kLayer3;
  return pod;
}

// A member's /filter with the nodes the scheduler's own fit lets through: those with 8 GPUs free.
json filter(ExtenderProcess& p, const json& pod, const json& names) {
  return post_json(p, "/filter", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}});
}

}  // namespace

TEST_CASE("group preemption: room is made in one block by evicting the lower-priority pod, then the group is planned there") {
  Bed bed;
  ExtenderProcess p(bed.args());
  REQUIRE(eventually([&] { return ready(p); }));
  const json first = filter(p, member(0, 1000), json::array({"a-0"}));
  CHECK(first["NodeNames"].empty());
  INFO(first.dump());
  CHECK(failure_of(first, "a-0").find("may preempt") != std::string::npos);

  // The preemptor evicts low (not vip: priority 5000), once, and says so on the pod.
  // The event follows the eviction: wait for it.
  REQUIRE(eventually([&] { return !bed.api.posted_events().empty(); }, std::chrono::seconds(15)));
  CHECK(bed.api.evictions() == std::vector<std::string>{"ml/low"});
  const auto events = bed.api.posted_events();
  REQUIRE(events.size() == 1);
  CHECK(events[0]["reason"] == "Preempted");
  CHECK(events[0]["involvedObject"]["name"] == "low");
  CHECK(events[0]["involvedObject"]["uid"] == "uid-low");
  CHECK(events[0]["message"].get<std::string>().find("Preempted by pod group ml/train (priority 1000)") != std::string::npos);
  CHECK(bed.api.traffic().calls.count("POST /api/v1/namespaces/ml/pods/low/eviction") == 1);  // dry run and eviction: one path
  // The fake deletes the evicted pod at once; once the watch shows it gone, the members go to block a.
  REQUIRE(eventually([&] {
    return filter(p, member(0, 1000), json::array({"a-0", "a-1"}))["NodeNames"].size() == 2;
  }, std::chrono::seconds(10)));
  CHECK(filter(p, member(1, 1000), json::array({"a-0", "a-1", "b-0"}))["NodeNames"] == json::array({"a-0", "a-1"}));
  const auto series = test_support::scrape(p.port());
  CHECK(test_support::value_of(series, "gpu_extender_group_preemptions_total") == 1);
  CHECK(test_support::value_of(series, "gpu_extender_group_preemption_victims_total") == 1);
  CHECK(bed.api.evictions().size() == 1);  // the victims went once
}

TEST_CASE("group preemption: a pod its budget protects is not evicted, and the group waits with the reason") {
  Bed bed;
  bed.api.protect_from_eviction("ml/low");
  ExtenderProcess p(bed.args());
  REQUIRE(eventually([&] { return ready(p); }));
  filter(p, member(0, 1000), json::array({"a-0"}));
  // The dry run is refused (429): the plan is made again without low, and no block holds the group.
  REQUIRE(eventually([&] { return bed.api.traffic().calls.count("POST /api/v1/namespaces/ml/pods/low/eviction") > 0; },
                     std::chrono::seconds(15)));
  REQUIRE(eventually([&] {
    const json e = post_json(p, "/explain", {{"Pod", member(0, 1000)}, {"Nodes", nullptr},
                                                          {"NodeNames", json::array({"a-0"})}});
    return e["group"]["preemption"]["note"].get<std::string>().find("even with every pod it may preempt gone") !=
           std::string::npos;
  }, std::chrono::seconds(10)));
  CHECK(bed.api.evictions().empty());
  CHECK(bed.api.posted_events().empty());
}

TEST_CASE("group preemption: --no-group-preemption evicts nothing") {
  Bed bed;
  ExtenderProcess p(bed.args({"--no-group-preemption"}));
  REQUIRE(eventually([&] { return ready(p); }));
  const json first = filter(p, member(0, 1000), json::array({"a-0"}));
  CHECK(failure_of(first, "a-0").find("may preempt") == std::string::npos);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // two periods of a preemptor, were one running
  CHECK(bed.api.traffic().calls.count("POST /api/v1/namespaces/ml/pods/low/eviction") == 0);
}
