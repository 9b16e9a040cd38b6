// Room for a group by eviction (group_preemption.h): one domain, strictly lower priorities, the fewest
// and least important victims, never a budget-protected pod or another group's member.
#include <catch2/catch.hpp>

#include <set>

#include "group_fleet.h"
#include "gpu_extender/policy/group_preemption.h"

using namespace gpu_extender;
using namespace group_fleet;

namespace {

// The cluster: nn-a 4 nodes, nn-b 4, nn-c 2, every node 8 GPUs.
struct Cluster {
  Fleet fleet;
  std::vector<PreemptionVictim> pods;
  Cluster() {
    fleet.add_block("nn-a", 4);
    fleet.add_block("nn-b", 4);
    fleet.add_block("nn-c", 2);
  }
  size_t index(const std::string& node) const {
    for (size_t i = 0; i < fleet.names.size(); ++i)
      if (fleet.names[i] == node) return i;
    FAIL("no node " << node);
    return 0;
  }
  // A bound pod of `gpus` GPUs at `priority` on `node`, counted in the node's usage.
  PreemptionVictim& run(const std::string& name, const std::string& node, int gpus, int32_t priority) {
    PreemptionVictim& v = pods.emplace_back();
    v.uid = "uid-" + name;
    v.ns = "batch";
    v.name = name;
    v.node = node;
    v.requests.set(ViewSchema::kGpuResource, gpus * 1000LL);
    v.priority = priority;
    ResourceAmounts& used = fleet.used[index(node)];
    used.add(ViewSchema::kGpuResource, gpus * 1000LL);
    return v;
  }
};

PodRequest required_member(int gpus, std::string_view size = "4") {
  PodRequest p = member(gpus, size);
  p.group.required_topology = "topology.k8s.aws/network-node-layer-3";
  p.group.required_key = "gpu.nvidia.com/group-required-topology";
  return p;
}

GroupPreemptionPlan preempt(Cluster& c, const PodRequest& pod, int32_t priority, int64_t needed,
                            std::vector<std::string> bound = {}, std::vector<std::string> avoid = {}) {
  static const auto policy = test_support::default_policy();
  const std::optional<GroupSpec> spec = group_spec_of(pod, policy->schema());
  REQUIRE(spec);
  REQUIRE(spec->invalid_reason.empty());
  GroupPreemptionRequest r;
  r.policy = policy.get();
  r.spec = &*spec;
  r.member = &pod;
  r.priority = priority;
  r.needed = needed;
  r.nodes = c.fleet.candidates();
  r.pods = c.pods;
  r.bound_nodes = std::move(bound);
  r.avoid = std::move(avoid);
  return plan_group_preemption(r);
}

std::set<std::string> names_of(const std::vector<PreemptionVictim>& victims) {
  std::set<std::string> out;
  for (const auto& v : victims) out.insert(v.name);
  return out;
}

std::set<std::string> blocks_of(const std::vector<std::string>& slots) {
  std::set<std::string> out;
  for (const std::string& node : slots) out.insert(node.substr(0, node.find("-node-")));
  return out;
}

}  // namespace

TEST_CASE("group preemption: one victim makes nn-a whole, nn-b's two are left alone") {
  Cluster c;
  c.run("low-a3", "nn-a-node-3", 8, 0);
  c.run("low-b0", "nn-b-node-0", 8, 0);
  c.run("low-b1", "nn-b-node-1", 8, 0);
  const GroupPreemptionPlan plan = preempt(c, required_member(8), 1000, 4);
  REQUIRE(plan.chosen);
  CHECK(plan.domain == "z1/nn-1/nn-2/nn-a");
  CHECK(names_of(plan.victims) == std::set<std::string>{"low-a3"});
  REQUIRE(plan.slots.size() == 4);
  CHECK(blocks_of(plan.slots) == std::set<std::string>{"nn-a"});
  CHECK(std::count(plan.slots.begin(), plan.slots.end(), "nn-a-node-3") == 1);
  CHECK(plan.rank.count == 1);
  REQUIRE(plan.considered.size() == 3);  // nn-c (2 nodes) cannot hold 4 members at all
  CHECK(plan.considered.front().domain == plan.domain);
  CHECK_FALSE(plan.considered.back().feasible);
}

TEST_CASE("group preemption: a middle group uses nn-b while the first holds nn-a, evicting exactly nn-b's pods") {
  Cluster c;
  c.run("low-b0", "nn-b-node-0", 8, 0);
  c.run("low-b1", "nn-b-node-1", 8, 0);
  for (int i = 0; i < 4; ++i) c.run("first-" + std::to_string(i), "nn-a-node-" + std::to_string(i), 8, 1000).group = "ml/first";
  const GroupPreemptionPlan plan = preempt(c, required_member(8), 500, 4);
  REQUIRE(plan.chosen);
  CHECK(plan.domain == "z1/nn-1/nn-2/nn-b");
  CHECK(names_of(plan.victims) == std::set<std::string>{"low-b0", "low-b1"});
  CHECK(blocks_of(plan.slots) == std::set<std::string>{"nn-b"});
}

TEST_CASE("group preemption: never a pod of equal or higher priority, the lowest group evicts nothing") {
  Cluster c;
  for (int i = 0; i < 4; ++i) c.run("a" + std::to_string(i), "nn-a-node-" + std::to_string(i), 8, 0);
  for (int i = 0; i < 4; ++i) c.run("b" + std::to_string(i), "nn-b-node-" + std::to_string(i), 8, 100);
  const GroupPreemptionPlan plan = preempt(c, required_member(8), 0, 4);
  CHECK_FALSE(plan.chosen);
  CHECK(plan.victims.empty());
  CHECK(plan.reason.find("priority 0") != std::string::npos);
  CHECK(plan.reason.find("network-node-layer-3") != std::string::npos);
  // Priority 50: nn-a's pods (priority 0) may go, never nn-b's (100).
  const GroupPreemptionPlan up = preempt(c, required_member(8), 50, 4);
  REQUIRE(up.chosen);
  CHECK(names_of(up.victims) == std::set<std::string>{"a0", "a1", "a2", "a3"});
}

TEST_CASE("group preemption: domains rank by the highest victim priority, then the sum, then the count, then costs") {
  SECTION("a lower highest priority wins over fewer victims") {
    Cluster c;
    c.run("a-mid", "nn-a-node-0", 8, 50);                                     // nn-a: one victim at 50
    c.run("b-low0", "nn-b-node-0", 8, 10), c.run("b-low1", "nn-b-node-1", 8, 10);  // nn-b: two at 10
    const GroupPreemptionPlan plan = preempt(c, required_member(8), 1000, 4);
    REQUIRE(plan.chosen);
    CHECK(names_of(plan.victims) == std::set<std::string>{"b-low0", "b-low1"});
  }
  SECTION("equal priorities: fewer victims win") {
    Cluster c;
    c.run("a0", "nn-a-node-0", 8, 10);
    c.run("b0", "nn-b-node-0", 4, 10), c.run("b1", "nn-b-node-0", 4, 10);
    // Sum 10 against 20: nn-a's single pod.
    const GroupPreemptionPlan plan = preempt(c, required_member(8), 1000, 4);
    REQUIRE(plan.chosen);
    CHECK(names_of(plan.victims) == std::set<std::string>{"a0"});
  }
  SECTION("all else equal: the smaller sum of pod deletion costs") {
    Cluster c;
    c.run("a0", "nn-a-node-0", 8, 10).deletion_cost = 100;
    c.run("b0", "nn-b-node-0", 8, 10).deletion_cost = -5;
    const GroupPreemptionPlan plan = preempt(c, required_member(8), 1000, 4);
    REQUIRE(plan.chosen);
    CHECK(names_of(plan.victims) == std::set<std::string>{"b0"});
  }
}

TEST_CASE("group preemption: room that is free needs no victim") {
  Cluster c;
  for (int i = 0; i < 4; ++i) c.run("a" + std::to_string(i), "nn-a-node-" + std::to_string(i), 8, 0);
  const GroupPreemptionPlan plan = preempt(c, required_member(8), 1000, 4);
  REQUIRE(plan.chosen);
  CHECK(plan.victims.empty());  // nn-b is free: the whole group fits there
  CHECK(blocks_of(plan.slots) == std::set<std::string>{"nn-b"});
}

TEST_CASE("group preemption: the least important pod on the node goes, the other is reprieved") {
  Cluster c;
  c.fleet = Fleet{};
  c.fleet.add_block("nn-a", 1);
  c.run("small-high", "nn-a-node-0", 4, 5);
  c.run("small-low", "nn-a-node-0", 4, 1);
  const GroupPreemptionPlan plan = preempt(c, required_member(4, "1"), 100, 1);
  REQUIRE(plan.chosen);
  CHECK(names_of(plan.victims) == std::set<std::string>{"small-low"});
}

TEST_CASE("group preemption: a budget-protected pod, another group's member or a terminating pod is never a victim") {
  Cluster c;
  c.fleet = Fleet{};
  c.fleet.add_block("nn-a", 2);
  c.run("guarded", "nn-a-node-0", 8, 0).budget_refused = true;
  c.run("other-group", "nn-a-node-1", 8, 0).group = "batch/other";
  const GroupPreemptionPlan none = preempt(c, required_member(8, "2"), 1000, 2);
  CHECK_FALSE(none.chosen);
  CHECK(none.reason.find("0 bound pod(s)") != std::string::npos);
  // A terminating pod frees its room without an eviction: the room it leaves counts, it is no victim.
  c.pods[0].budget_refused = false;
  c.pods[1].terminating = true;
  const GroupPreemptionPlan plan = preempt(c, required_member(8, "2"), 1000, 2);
  REQUIRE(plan.chosen);
  CHECK(names_of(plan.victims) == std::set<std::string>{"guarded"});
}

TEST_CASE("group preemption: a group without topology gets room over the whole cluster, fewest victims") {
  Cluster c;
  for (int i = 0; i < 4; ++i) c.run("a" + std::to_string(i), "nn-a-node-" + std::to_string(i), 8, 0);
  for (int i = 0; i < 4; ++i) c.run("b" + std::to_string(i), "nn-b-node-" + std::to_string(i), 8, 0);
  c.run("c0", "nn-c-node-0", 8, 0);
  // 3 members: nn-c has one free node; no layer-3 block holds 3 without 3 victims... nn-a and nn-b need 3,
  // nn-c cannot hold 3: the default level (layer 3) gives 3 victims in nn-a; all equal, first name wins.
  const GroupPreemptionPlan plan = preempt(c, member(8, "3"), 1000, 3);
  REQUIRE(plan.chosen);
  CHECK(plan.victims.size() == 3);
  CHECK(blocks_of(plan.slots).size() == 1);
}

TEST_CASE("group preemption: a required group with members bound stays in their block, never split") {
  Cluster c;
  c.run("low-b0", "nn-b-node-0", 8, 0);  // nn-b: one victim for one member
  for (int i = 0; i < 3; ++i) c.run("member-" + std::to_string(i), "nn-a-node-" + std::to_string(i), 8, 1000);
  c.run("low-a3a", "nn-a-node-3", 4, 0), c.run("low-a3b", "nn-a-node-3", 4, 0);  // nn-a: two victims
  const PodRequest pod = required_member(8);
  const GroupPreemptionPlan free_choice = preempt(c, pod, 1000, 1);
  REQUIRE(free_choice.chosen);
  CHECK(blocks_of(free_choice.slots) == std::set<std::string>{"nn-b"});  // one victim beats two
  const GroupPreemptionPlan stay = preempt(c, pod, 1000, 1, {"nn-a-node-0", "nn-a-node-1", "nn-a-node-2"});
  REQUIRE(stay.chosen);
  CHECK(blocks_of(stay.slots) == std::set<std::string>{"nn-a"});
  CHECK(names_of(stay.victims) == std::set<std::string>{"low-a3a", "low-a3b"});
  // A domain where room made went unused is not chosen again.
  const GroupPreemptionPlan avoided = preempt(c, pod, 1000, 1, {}, {"z1/nn-1/nn-2/nn-b"});
  REQUIRE(avoided.chosen);
  CHECK(blocks_of(avoided.slots) != std::set<std::string>{"nn-b"});
}

TEST_CASE("group preemption: native gang members are no victims, and negative priorities sum as the scheduler sums them") {
  SECTION("a member of a native gang") {
    Cluster c;
    c.fleet = Fleet{};
    c.fleet.add_block("nn-a", 1);
    c.run("gang-0", "nn-a-node-0", 8, 0).native_gang = true;
    CHECK_FALSE(preempt(c, required_member(8, "1"), 1000, 1).chosen);
  }
  SECTION("one victim at -10 beats four at -10 (sums offset by 2^31)") {
    Cluster c;
    c.run("a0", "nn-a-node-0", 8, -10);
    for (int i = 0; i < 4; ++i) c.run("b" + std::to_string(i), "nn-b-node-0", 2, -10);
    const GroupPreemptionPlan plan = preempt(c, required_member(8, "4"), 1000, 4);
    REQUIRE(plan.chosen);
    CHECK(names_of(plan.victims) == std::set<std::string>{"a0"});
  }
}

TEST_CASE("group preemption: pods already terminating on the chosen nodes are waited for") {
  Cluster c;
  c.fleet = Fleet{};
  c.fleet.add_block("nn-a", 2);
  c.run("leaving", "nn-a-node-0", 8, 5000).terminating = true;
  c.run("low", "nn-a-node-1", 8, 0);
  const GroupPreemptionPlan plan = preempt(c, required_member(8, "2"), 1000, 2);
  REQUIRE(plan.chosen);
  CHECK(names_of(plan.victims) == std::set<std::string>{"low"});
  CHECK(names_of(plan.leaving) == std::set<std::string>{"leaving"});
}
