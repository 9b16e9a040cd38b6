// Pod deletion costs: the formula, the buckets, who owns a cost, the policy keys, the costs command,
// and the point of it all: a ReplicaSet scale-down (ordered as the ReplicaSet controller orders
// pods) empties more nodes with the costs than without.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gpu_extender/policy/deletion_cost.h"
#include "kube/rate_limiter.h"
#include "tools/tools.h"
#include "test_support.h"

using namespace gpu_extender;
using nlohmann::json;

namespace {
ResourceAmounts gpus(int n) {
  ResourceAmounts a;
  a.set(ViewSchema::kGpuResource, n * 1000LL);
  return a;
}
std::string example(const std::string& name) {
  return test_support::source_path("extender-config/examples/scale-down/" + name);
}
}  // namespace

TEST_CASE("deletion cost: rises with the node's fullness in what the pod uses, in buckets, up to maxCost") {
  const PolicyConfig config = default_policy_config();
  const NodeView node = test_support::gpu_node("n", "A100", "40960", 8);
  auto cost_with = [&](int used) {
    return deletion_cost(gpus(1), node, gpus(used), config.schema, config.deletion_cost);
  };
  CHECK(cost_with(1)->cost == 100);  // 1 of 8: bucket 1
  CHECK(cost_with(1)->bucket == 1);
  CHECK(cost_with(2)->cost == 200);  // 25%: bucket 2
  CHECK(cost_with(4)->cost == 500);
  CHECK(cost_with(8)->cost == 1000);
  CHECK(cost_with(8)->resource == "nvidia.com/gpu");
  CHECK(cost_with(12)->cost == 1000);  // over-full counts as full
  // The fullest of what the pod uses decides; a pod using nothing the node offers has no cost.
  NodeView both = node;
  both.allocatable.set(ViewSchema::kPackedResource, 10000);
  ResourceAmounts pod = gpus(1);
  pod.set(ViewSchema::kPackedResource, 1000);
  ResourceAmounts used = gpus(1);
  used.set(ViewSchema::kPackedResource, 9000);
  const auto packed = deletion_cost(pod, both, used, config.schema, config.deletion_cost);
  CHECK(packed->resource == "custom.resource/aaa");
  CHECK(packed->cost == 900);
  CHECK_FALSE(deletion_cost(ResourceAmounts{}, node, gpus(3), config.schema, config.deletion_cost));
  // Other ranges from the policy.
  const PolicyConfig coarse = parse_policy("deletionCost: {buckets: 4, maxCost: 2147483647}\n", "p.yaml");
  CHECK(deletion_cost(gpus(1), node, gpus(8), coarse.schema, coarse.deletion_cost)->cost == 2147483647);
  CHECK(deletion_cost(gpus(1), node, gpus(2), coarse.schema, coarse.deletion_cost)->cost == 536870912);  // bucket 1 of 4
  CHECK_THROWS_WITH(parse_policy("deletionCost: {maxCost: 2147483648}\n", "p.yaml"),
                    "p.yaml: deletionCost.maxCost: must be 1..2147483647");
  CHECK_THROWS_WITH(parse_policy("deletionCost: {buckets: 0}\n", "p.yaml"), "p.yaml: deletionCost.buckets: must be 1..100");
}

TEST_CASE("deletion cost: written when missing or the extender's own and stale, never over someone else's") {
  CHECK(deletion_cost_action(std::nullopt, std::nullopt, 500) == CostAction::kWrite);
  CHECK(deletion_cost_action("300", "300", 500) == CostAction::kWrite);       // ours, bucket changed
  CHECK(deletion_cost_action("500", "500", 500) == CostAction::kUpToDate);
  CHECK(deletion_cost_action("-100", std::nullopt, 500) == CostAction::kUserOwned);  // a user's
  CHECK(deletion_cost_action("900", "500", 500) == CostAction::kUserOwned);   // a user changed ours
  CostedPod pod{"ns", "p", "u", "n", "", gpus(1), std::nullopt, std::nullopt};
  CHECK(keeps_cost_of(pod, {"default-scheduler"}));
  CHECK_FALSE(keeps_cost_of(pod, {"gpu-scheduler"}));
  pod.scheduler_name = "gpu-scheduler";
  CHECK(keeps_cost_of(pod, {"gpu-scheduler"}));
}

TEST_CASE("deletion cost: the costs command shows each placed pod's cost and why") {
  std::ostringstream out, err;
  REQUIRE(run_costs({"--nodes", example("nodes.yaml"), "--pods-snapshot", example("pods-running.yaml"), "--format", "json"},
                    out, err) == 0);
  const json costs = json::parse(out.str());
  REQUIRE(costs.size() == 24);
  std::map<std::string, int64_t> cost_by_node;
  for (const auto& c : costs) cost_by_node[c["node"]] = c["cost"];
  CHECK(cost_by_node == std::map<std::string, int64_t>{
                            {"gpu-1", 1000}, {"gpu-2", 1000}, {"gpu-3", 500}, {"gpu-4", 200}, {"gpu-5", 100}, {"gpu-6", 100}});
  CHECK(costs[0]["why"] == "100% of nvidia.com/gpu in use on the node (bucket 10 of 10): write");
  // Another scheduler's pods get none.
  std::ostringstream none;
  REQUIRE(run_costs({"--nodes", example("nodes.yaml"), "--pods-snapshot", example("pods-running.yaml"), "--scheduler-name",
                     "other", "--format", "json"},
                    none, err) == 0);
  CHECK(json::parse(none.str()).empty());
}

TEST_CASE("deletion cost: a ReplicaSet scale-down empties more nodes with the costs than without") {
  std::ostringstream out, err;
  REQUIRE(run_costs({"--nodes", example("nodes.yaml"), "--pods-snapshot", example("pods-running.yaml"), "--format", "json"},
                    out, err) == 0);
  struct Replica {
    std::string node;
    int64_t cost;
    int created;  // order of creation: the pod list's order
  };
  std::vector<Replica> replicas;
  for (const auto& c : json::parse(out.str())) replicas.push_back({c["node"], c["cost"], static_cast<int>(replicas.size())});

  // The ReplicaSet controller's order, kubernetes v1.26 pkg/controller/controller_utils.go,
  // ActivePodsWithRanks.Less: 1. unassigned, 2. pending, 3. not ready before the others (all pods here
  // are assigned, running and ready, so these tie); 4. lower pod-deletion-cost first; 5. more replicas
  // of the set on the same node first (the rank: "doubled up"); 6. ready for less time, 7. more
  // restarts (equal here); 8. the newer pod first.
  auto empty_nodes_after_scale_down = [&](bool with_costs, size_t keep) {
    std::map<std::string, int> on_node;
    for (const auto& r : replicas) ++on_node[r.node];
    std::vector<Replica> order = replicas;
    std::stable_sort(order.begin(), order.end(), [&](const Replica& a, const Replica& b) {
      const int64_t ca = with_costs ? a.cost : 0, cb = with_costs ? b.cost : 0;
      if (ca != cb) return ca < cb;
      if (on_node[a.node] != on_node[b.node]) return on_node[a.node] > on_node[b.node];
      return a.created > b.created;
    });
    std::map<std::string, int> left = on_node;
    for (size_t i = 0; i < order.size() - keep; ++i) --left[order[i].node];
    return std::count_if(left.begin(), left.end(), [](const auto& kv) { return kv.second == 0; });
  };
  const auto without = empty_nodes_after_scale_down(false, 12);
  const auto with = empty_nodes_after_scale_down(true, 12);
  std::cout << "scale-down 24 -> 12 replicas on 6 nodes: " << without << " node(s) empty without costs, " << with
            << " with costs\n";
  CHECK(with > without);
  CHECK(with == 4);
}

TEST_CASE("deletion cost: patches are paced by a token bucket of qps, with a burst of qps") {
  RateLimiter limiter(2.0, 2.0);
  const auto t0 = RateLimiter::Clock::now();
  RateLimiter::Clock::duration wait{};
  CHECK(limiter.try_take(t0, wait));
  CHECK(limiter.try_take(t0, wait));  // the burst
  CHECK_FALSE(limiter.try_take(t0, wait));
  CHECK(std::chrono::duration<double>(wait).count() == Approx(0.5));
  CHECK_FALSE(limiter.try_take(t0 + std::chrono::milliseconds(400), wait));
  CHECK(limiter.try_take(t0 + std::chrono::milliseconds(500), wait));
  // Over ten seconds, at most 2 a second (plus the burst) get through, however often one asks.
  int taken = 0;
  for (int ms = 0; ms <= 10000; ms += 10)
    taken += limiter.try_take(t0 + std::chrono::milliseconds(500 + ms), wait) ? 1 : 0;
  CHECK(taken == 20);
}
