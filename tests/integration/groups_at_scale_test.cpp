// Pod groups where the scheduler sends only part of the cluster, where two schedulers plan at once, and
// where a member is deleted while the job runs: at the scheduler's pace (the driver), the truth read
// from the API server at the end. Each group ends whole in one block or with nothing bound, never split,
// no node over its GPUs, no room held once the run settles.
#include <catch2/catch.hpp>

#include <future>
#include <random>
#include <set>

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

// `blocks` layer-3 blocks of `per_block` 8-GPU nodes named "gpu-<block letter>-<i>".
void add_blocks(FakeApiServer& api, const std::vector<int>& per_block) {
  for (size_t b = 0; b < per_block.size(); ++b)
    for (int i = 0; i < per_block[b]; ++i) {
      json node = test_support::make_node(std::string("gpu-") + static_cast<char>('a' + b) + "-" + std::to_string(i), "A100", 8);
      node["metadata"]["labels"][kLayer3] = std::string("nn-") + static_cast<char>('a' + b);
      api.put_node(node);
    }
}
constexpr size_t kBlockAt = 4;  // "gpu-<block>-<i>"

json member(const std::string& group, int index, int size, int gpus) {
  json pod = test_support::pending_pod(group + "-" + std::to_string(index), gpus, 0, group);
  auto& annotations = pod["metadata"]["annotations"];
  annotations["gpu.nvidia.com/group"] = group;
  annotations["gpu.nvidia.com/group-size"] = std::to_string(size);
  annotations["gpu.nvidia.com/required-topology"] = kLayer3;
  return pod;
}

std::vector<json> job(const std::string& name, int size, int gpus) {
  std::vector<json> pods;
  for (int i = 0; i < size; ++i) pods.push_back(member(name, i, size, gpus));
  return pods;
}

DriverOptions retrying(uint64_t seed) {
  DriverOptions options;
  options.node_cache_capable = true;
  options.seed = seed;
  options.attempts = 12;
  options.initial_backoff = std::chrono::milliseconds(100);
  options.max_backoff = std::chrono::milliseconds(800);
  return options;
}

std::vector<std::string> extender_args(FakeApiServer& api) {
  std::vector<std::string> args = api.extender_args();
  for (const char* a : {"--group-gate-ms", "1500", "--group-ttl-seconds", "3"}) args.emplace_back(a);
  return args;
}

// Whole in one block or nothing bound, per group; no node over 8 GPUs; nothing held once settled.
void check_settled(FakeApiServer& api, ExtenderProcess& extender, const std::map<std::string, int>& size_of) {
  const test_support::GroupTruth truth = test_support::group_truth(api, kBlockAt);
  for (const auto& [group, size] : size_of) {
    const int bound = truth.bound.count(group) ? truth.bound.at(group) : 0;
    INFO("group " << group << ": " << bound << " of " << size << " bound");
    CHECK(bound == size);
    CHECK(truth.blocks.at(group).size() == 1);
  }
  for (const auto& [node, gpus] : truth.gpus_on) CHECK(gpus <= 8000);
  CHECK(test_support::eventually([&] {
    return test_support::value_of(test_support::scrape(extender.port()), "gpu_extender_groups_reserved_gpus") == 0;
  }));
}

}  // namespace

TEST_CASE("groups at scale: the scheduler's node sample (percentageOfNodesToScore 10 of 240 nodes) moves plans, never splits them") {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    INFO("seed " << seed);
    FakeApiServer api;
    add_blocks(api, {40, 40, 40, 40, 40, 40});
    ExtenderProcess extender(extender_args(api));
    REQUIRE(test_support::becomes_ready(extender));
    // Three jobs of 8 x 8 GPUs, their members interleaved with plain pods in a seeded order. Each cycle
    // the scheduler sends the 100 nodes its search found from where the last stopped (findNodesThatPassFilters):
    // a member's planned nodes are often not among them.
    std::mt19937_64 rng(seed);
    std::map<std::string, int> size_of;
    std::vector<json> queue;
    for (int j = 0; j < 3; ++j) {
      size_of["job-" + std::to_string(j)] = 8;
      for (json& pod : job("job-" + std::to_string(j), 8, 8)) queue.push_back(std::move(pod));
    }
    std::shuffle(queue.begin(), queue.end(), rng);
    for (int plain = 0; plain < 6; ++plain)
      queue.insert(queue.begin() + static_cast<std::ptrdiff_t>(rng() % queue.size()),
                   test_support::pending_pod("plain-" + std::to_string(plain), 1, 0));
    for (const json& p : queue) api.put_pod(p);
    DriverOptions options = retrying(seed);
    options.percentage_of_nodes_to_score = 10;
    REQUIRE(test_support::feasible_nodes_to_find(240, 10) == 100);
    {
      SchedulerDriver driver(api, extender.port(), options);
      driver.schedule(queue);
    }
    check_settled(api, extender, size_of);
    const auto metrics = test_support::scrape(extender.port());
    CHECK(test_support::value_of(metrics, "gpu_extender_groups_placed_total") == 3);
    // The sample left planned nodes out at least once: the plan moved (within its block) and still held.
    CHECK(test_support::value_of(metrics, "gpu_extender_groups_moved_total") >= 1);
  }
}

TEST_CASE("groups at scale: two schedulers' first members plan at once, over the one block that holds both groups") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    FakeApiServer api;
    add_blocks(api, {4, 1});  // block a holds two groups of 2 x 8 GPUs exactly; block b none
    ExtenderProcess extender(extender_args(api));
    REQUIRE(test_support::becomes_ready(extender));
    const std::vector<json> first = job("job-0", 2, 8), second = job("job-1", 2, 8);
    for (const auto* pods : {&first, &second})
      for (const json& p : *pods) api.put_pod(p);
    // Two scheduler replicas (or profiles), each with its own cache, their first members' /filter at once:
    // the extender's plans must not count the same free GPUs twice.
    auto run = [&](const std::vector<json>& pods, uint64_t s) {
      SchedulerDriver driver(api, extender.port(), retrying(s));
      return driver.schedule(pods);
    };
    auto a = std::async(std::launch::async, run, first, seed);
    auto b = std::async(std::launch::async, run, second, seed + 100);
    a.get();
    b.get();
    check_settled(api, extender, {{"job-0", 2}, {"job-1", 2}});
    const test_support::GroupTruth truth = test_support::group_truth(api, kBlockAt);
    CHECK(*truth.blocks.at("job-0").begin() == "a");
    CHECK(*truth.blocks.at("job-1").begin() == "a");
  }
}

TEST_CASE("groups at scale: a member deleted while the job runs is replaced in its group's block, not the emptier one") {
  FakeApiServer api;
  add_blocks(api, {5, 8});  // the job of 4 x 8 GPUs: block a (the fuller, by binpacking) keeps a free node
  ExtenderProcess extender(extender_args(api));
  REQUIRE(test_support::becomes_ready(extender));
  const std::vector<json> pods = job("job-0", 4, 8);
  for (const json& p : pods) api.put_pod(p);
  {
    SchedulerDriver driver(api, extender.port(), retrying(1));
    driver.schedule(pods);
  }
  const test_support::GroupTruth placed = test_support::group_truth(api, kBlockAt);
  REQUIRE(placed.bound.at("job-0") == 4);
  const std::string block = *placed.blocks.at("job-0").begin();

  // Drained: member 0 terminates slowly (deletionTimestamp, still on its node); the Job controller makes
  // its replacement at once, with the group's annotations.
  json terminating = pods[0];
  for (const json& p : api.pods())
    if (p["metadata"]["name"] == "job-0-0") terminating = p;
  terminating["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z";
  api.put_pod(terminating);
  const json replacement = member("job-0", 4, 4, 8);
  api.put_pod(replacement);
  std::vector<Placement> placement;
  {
    SchedulerDriver driver(api, extender.port(), retrying(2));
    placement = driver.schedule({replacement});
  }
  REQUIRE(placement.size() == 1);
  INFO(placement[0].error);
  REQUIRE_FALSE(placement[0].node.empty());
  CHECK(placement[0].node.substr(kBlockAt, 1) == block);
  api.delete_pod("burst", "job-0-0");
  check_settled(api, extender, {{"job-0", 4}});
}
