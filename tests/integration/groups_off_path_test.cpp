// Pod groups off the happy path, at the scheduler's pace with its retries (the driver's backoff rounds):
// members ask 4 of a node's 8 GPUs but 12 of its 16 CPUs (the plan must count CPU, as the scheduler's
// NodeResourcesFit does, or it stacks two a node), the node equal fits would put the first plan on has a
// taint the pods do not tolerate (the extender does not read taints: the plan is made over the nodes the
// scheduler sent), a job of 2-GPU workers keeps one worker a node by hostname anti-affinity (which the
// extender does not read: the plan stacks them, the scheduler refuses, the plan moves), binds fail at the
// API, plain pods arrive between members. Seeded runs show what
// the group book promises (group_book.h): every group ends whole in one block or with nothing bound,
// never split, no room held once the run settles, and no node over its GPUs or CPUs.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "group_truth.h"
#include "http_support.h"
#include "metrics_support.h"
#include "scheduler_driver.h"

using nlohmann::json;
using test_support::DriverOptions;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;
using test_support::Placement;
using test_support::SchedulerDriver;

namespace {

constexpr const char* kLayer3 = "topology.k8s.aws/network-node-layer-3";
constexpr int kBlocks = 3, kNodesPerBlock = 4;

// Blocks of 16-CPU 8-GPU nodes.
void add_fleet(FakeApiServer& api) {
  for (int b = 0; b < kBlocks; ++b)
    for (int i = 0; i < kNodesPerBlock; ++i) {
      json node = test_support::make_node("p5-" + std::to_string(b) + "-" + std::to_string(i), "A100", 8);
      node["metadata"]["labels"][kLayer3] = "nn-block-" + std::to_string(b);
      for (const char* field : {"capacity", "allocatable"}) node["status"][field]["cpu"] = "16";
      if (b == 0 && i == 0)  // the first node of the first block: where equal fits put the first plan
        node["spec"]["taints"] = json::array({{{"key", "example.com/maintenance"}, {"value", "true"}, {"effect", "NoSchedule"}}});
      api.put_node(node);
    }
}

json with_cpu(json pod, const std::string& cpu) {
  pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] = cpu;
  return pod;
}

// A worker: 4 GPUs and 12 CPUs, so one a node though the GPUs would take two.
json worker(const std::string& group, int index, int size) {
  json pod = with_cpu(test_support::pending_pod(group + "-" + std::to_string(index), 4, 0, group), "12");
  auto& annotations = pod["metadata"]["annotations"];
  annotations["gpu.nvidia.com/group"] = group;
  annotations["gpu.nvidia.com/group-size"] = std::to_string(size);
  annotations["gpu.nvidia.com/required-topology"] = kLayer3;
  return pod;
}

// A worker of 2 GPUs and 1 CPU that wants no other worker of its job on its node (required anti-affinity).
json spread_worker(const std::string& group, int index, int size) {
  json pod = worker(group, index, size);
  pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/gpu", "2"}, {"cpu", "1"}};
  pod["metadata"]["labels"]["job"] = group;
  pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
      json::array({{{"labelSelector", {{"matchLabels", {{"job", group}}}}}, {"topologyKey", "kubernetes.io/hostname"}}});
  return pod;
}

using test_support::group_of_member;

}  // namespace

TEST_CASE("groups off the happy path: seeded runs with CPU refusals, failed binds and retries end whole or empty, never split") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    FakeApiServer api;
    add_fleet(api);
    std::vector<std::string> args = api.extender_args();
    for (const char* a : {"--group-gate-ms", "1500", "--group-ttl-seconds", "2"}) args.emplace_back(a);
    ExtenderProcess extender(args);
    REQUIRE(test_support::becomes_ready(extender));
    // Two jobs of 2-4 workers (each fits one block of 4 nodes, one worker a node), one of 5 (fits no block),
    // plain one-GPU one-CPU pods between them; the members of each job in queue order, interleaved.
    std::mt19937_64 rng(seed);
    std::map<std::string, int> size_of;
    std::vector<std::vector<json>> jobs;
    for (int j = 0; j < 4; ++j) {
      const std::string name = "job-" + std::to_string(j);
      const int size = j == 2 ? 5 : 2 + static_cast<int>(rng() % 3);
      size_of[name] = size;
      jobs.emplace_back();
      for (int i = 0; i < size; ++i) jobs.back().push_back(j == 3 ? spread_worker(name, i, size) : worker(name, i, size));
    }
    std::vector<json> queue;
    std::vector<size_t> next(jobs.size(), 0);
    for (int plain = 0;;) {
      std::vector<size_t> open;
      for (size_t j = 0; j < jobs.size(); ++j)
        if (next[j] < jobs[j].size()) open.push_back(j);
      if (open.empty()) break;
      const size_t j = open[rng() % open.size()];
      queue.push_back(jobs[j][next[j]++]);
      if (rng() % 3 == 0) queue.push_back(with_cpu(test_support::pending_pod("plain-" + std::to_string(plain++), 1, 0), "1"));
    }
    for (const json& p : queue) api.put_pod(p);
    api.fail_next_binds(1 + static_cast<int>(rng() % 2), 500);  // the first binds fail at the API
    DriverOptions options;
    options.node_cache_capable = true;
    options.seed = seed;
    options.attempts = 8;
    options.initial_backoff = std::chrono::milliseconds(200);
    options.max_backoff = std::chrono::milliseconds(1000);
    std::vector<Placement> placed;
    {
      SchedulerDriver driver(api, extender.port(), options);
      placed = driver.schedule(queue);
    }

    // The truth is the API server's: per group, the blocks its bound members are in.
    test_support::GroupTruth truth = test_support::group_truth(api, 3);  // p5-<block>-<i>
    auto& [bound, blocks, node_of, gpus_on, cpus_on] = truth;
    std::set<std::string> spread_nodes;
    for (const auto& [pod, node] : node_of)
      if (group_of_member(pod) == "job-3") CHECK(spread_nodes.insert(node).second);  // one worker a node (anti-affinity)
    for (const auto& [group, size] : size_of) {
      INFO("group " << group << ": " << bound[group] << " of " << size << " bound");
      CHECK((bound[group] == 0 || bound[group] == size));  // whole, or nothing bound
      CHECK(blocks[group].size() <= 1);                     // never split
    }
    CHECK(bound["job-2"] == 0);  // 5 workers fit no block of 4 nodes
    CHECK(bound["job-0"] == size_of["job-0"]);
    CHECK(bound["job-1"] == size_of["job-1"]);
    CHECK(bound["job-3"] == size_of["job-3"]);
    for (const auto& [node, gpus] : gpus_on) CHECK(gpus <= 8000);
    for (const auto& [node, cpus] : cpus_on) CHECK(cpus <= 16000);
    for (const Placement& p : placed) {
      if (group_of_member(p.pod) != "job-2") continue;
      INFO(p.pod << ": " << p.error);
      CHECK(p.error.find("needs one " + std::string(kLayer3) + " domain") != std::string::npos);
    }
    // Nothing stays held: placed groups are forgotten, and the one that never fits holds nothing.
    CHECK(test_support::eventually([&] {
      return test_support::value_of(test_support::scrape(extender.port()), "gpu_extender_groups_reserved_gpus") == 0;
    }));
    const auto metrics = test_support::scrape(extender.port());
    CHECK(test_support::value_of(metrics, "gpu_extender_groups_placed_total") == 3);
    CHECK(test_support::value_of(metrics, "gpu_extender_groups_moved_total") >= 1);  // anti-affinity refused a stacked slot
    CHECK(gpus_on.count("p5-0-0") == 0);  // tainted: nothing planned or placed there
  }
}
