// Planning a group whole (group_plan.h): domains, best fit, climbing, and the group's own annotations.
#include <catch2/catch.hpp>

#include <set>

#include "group_fleet.h"

using namespace gpu_extender;
using namespace group_fleet;

namespace {

GroupPlan plan(Fleet& fleet, const PodRequest& pod, int64_t needed, std::vector<const NodeView*> bound = {}) {
  static const auto policy = test_support::default_policy();
  const std::optional<GroupSpec> spec = group_spec_of(pod, policy->schema());
  REQUIRE(spec);
  REQUIRE(spec->invalid_reason.empty());
  GroupPlanRequest r;
  r.policy = policy.get();
  r.spec = &*spec;
  r.member = &pod;
  r.nodes = fleet.candidates();
  r.needed = needed;
  r.bound_nodes = std::move(bound);
  return plan_group(r);
}

std::set<std::string> blocks_of(const GroupPlan& p) {
  std::set<std::string> out;
  for (const std::string& node : p.slots) out.insert(node.substr(0, node.find("-node-")));
  return out;
}

}  // namespace

TEST_CASE("group plan: a node's domain is the path of its values from the top, each with its label") {
  Fleet fleet;
  fleet.add_block("nn-a", 1);
  CHECK(domain_of(fleet.nodes[0], kLayer3) == "z1/nn-1/nn-2/nn-a");
  CHECK(domain_of(fleet.nodes[0], kLayer1) == "z1/nn-1");
  CHECK(domain_of(fleet.nodes[0], kLayer3 + 1).empty());  // layer 4: not carried
  const std::string path = describe_domain_path(fleet.nodes[0], default_policy_config().schema);
  CHECK(path.find("nn-a (topology.k8s.aws/network-node-layer-3)") != std::string::npos);
  CHECK(path.find("z1 (topology.kubernetes.io/zone)") == 0);
}

TEST_CASE("group plan: the group's annotations are checked, each error naming its annotation") {
  const ViewSchema schema = default_policy_config().schema;
  // The reason a member's annotations give, or "none" for a pod in no group.
  auto error_of = [&](const PodRequest& pod) {
    const std::optional<GroupSpec> spec = group_spec_of(pod, schema);
    return spec ? spec->invalid_reason : std::string("none");
  };
  PodRequest plain = test_support::gpu_pod(1);
  CHECK_FALSE(group_spec_of(plain, schema));

  PodRequest p = member(8);
  p.group.required_topology = "topology.k8s.aws/network-node-layer-3";
  p.group.required_key = "kueue.x-k8s.io/podset-required-topology";
  auto spec = group_spec_of(p, schema);
  REQUIRE(spec);
  CHECK(spec->invalid_reason.empty());
  CHECK(spec->key == "default/llama");
  CHECK(spec->size == 4);
  CHECK(spec->constraint.kind == GroupConstraint::Kind::kRequired);
  CHECK(spec->constraint.level == kLayer3);

  p.group.required_topology = "example.com/rack";
  CHECK(error_of(p).find("pod annotation kueue.x-k8s.io/podset-required-topology: \"example.com/rack\" is not a topology level") == 0);

  PodRequest no_size = member(8);
  no_size.group.size.reset();
  CHECK(error_of(no_size).find("does not say how many pods the group has: annotation gpu.nvidia.com/group-size or "
                   "kueue.x-k8s.io/pod-group-total-count") != std::string::npos);
  for (std::string_view bad : {"0", "-2", "four", "4.5", "10001"}) {
    CHECK(error_of(member(8, bad)) == "pod annotation gpu.nvidia.com/group-size: expected a whole number 1..10000, not \"" + std::string(bad) + "\"");
  }
}

TEST_CASE("group plan: required level, the domain left with the fewest free GPUs, one member per node") {
  Fleet fleet;
  fleet.add_block("nn-a", 5);  // 40 free: 8 left after 4 x 8
  fleet.add_block("nn-b", 4);  // 32 free: 0 left, the best fit
  fleet.add_block("nn-c", 6);  // 48 free: 16 left
  PodRequest pod = member(8);
  pod.group.required_topology = "topology.k8s.aws/network-node-layer-3";
  const GroupPlan p = plan(fleet, pod, 4);
  REQUIRE(p.planned);
  CHECK(p.level_label == "topology.k8s.aws/network-node-layer-3");
  CHECK(p.domains == std::vector<std::string>{"z1/nn-1/nn-2/nn-b"});
  CHECK(std::set<std::string>(p.slots.begin(), p.slots.end()).size() == 4);
  CHECK(blocks_of(p) == std::set<std::string>{"nn-b"});
  REQUIRE(p.considered.size() == 3);
  CHECK(p.considered[0].room == 4);
  CHECK(p.considered[0].free_gpus == 32);
}

TEST_CASE("group plan: equal fits go to the domain already more used, then by name") {
  Fleet fleet;
  fleet.add_block("nn-a", 5);
  fleet.add_block("nn-b", 6);
  fleet.use(10, 8);  // nn-b: 40 free like nn-a, 8 GPUs in use
  PodRequest pod = member(8);
  pod.group.required_topology = "topology.k8s.aws/network-node-layer-3";
  CHECK(plan(fleet, pod, 4).domains == std::vector<std::string>{"z1/nn-1/nn-2/nn-b"});
  fleet.use(10, 0);
  fleet.nodes.pop_back();
  fleet.used.pop_back();  // both 5 nodes, nothing used: by name
  CHECK(plan(fleet, pod, 4).domains == std::vector<std::string>{"z1/nn-1/nn-2/nn-a"});
}

TEST_CASE("group plan: required level and no domain holds the group: nothing planned, the reason names the best") {
  Fleet fleet;
  for (const char* block : {"nn-a", "nn-b", "nn-c"}) fleet.add_block(block, 4);
  fleet.use(0, 1);
  fleet.use(4, 1);
  fleet.use(5, 1);  // nn-a room 3, nn-b room 2, nn-c room 4 would hold it...
  fleet.use(8, 2);  // ...but not now: room 3
  PodRequest pod = member(8);
  pod.group.required_topology = "topology.k8s.aws/network-node-layer-3";
  const GroupPlan p = plan(fleet, pod, 4);
  CHECK_FALSE(p.planned);
  CHECK(p.slots.empty());
  // Among domains that do not hold the group: most room first (nn-a and nn-c, 3), then more used (nn-c).
  CHECK(p.reason ==
        "group default/llama (4 pods x 8 nvidia.com/gpu) needs one topology.k8s.aws/network-node-layer-3 domain; the "
        "best, nn-c, has room for 3");
}

TEST_CASE("group plan: preferred level climbs to the level that holds the group, then spans the fewest domains") {
  Fleet fleet;
  for (const char* block : {"nn-a", "nn-b", "nn-c"}) fleet.add_block(block, 4);
  for (size_t node : {0, 4, 8}) fleet.use(node, 1);  // room 3 in each block
  PodRequest pod = member(8);
  pod.group.preferred_topology = "topology.k8s.aws/network-node-layer-3";
  GroupPlan p = plan(fleet, pod, 4);
  REQUIRE(p.planned);
  CHECK(p.level_label == "topology.k8s.aws/network-node-layer-2");  // all blocks under nn-2
  CHECK(p.slots.size() == 4);
  // Within the level-2 domain, blocks with most room first (all 3: by name), so nn-a's 3 then one of nn-b.
  CHECK(blocks_of(p) == std::set<std::string>{"nn-a", "nn-b"});

  // Nothing above holds it either (each block under its own zone): the whole cluster, fewest blocks.
  for (size_t i = 0; i < fleet.nodes.size(); ++i) fleet.nodes[i].topology[kZone] = fleet.blocks[i / 4];
  pod.group.size = "7";
  p = plan(fleet, pod, 7);
  REQUIRE(p.planned);
  CHECK(p.level_label.empty());
  CHECK(p.spread_label == "topology.k8s.aws/network-node-layer-3");
  CHECK(p.domains.size() == 3);  // 3 + 3 + 1: three blocks are the fewest that hold 7
  pod.group.size = "10";
  p = plan(fleet, pod, 10);
  CHECK_FALSE(p.planned);
  CHECK(p.reason == "group default/llama (10 pods x 8 nvidia.com/gpu) does not fit: the nodes sent have room for 9 at once");
}

TEST_CASE("group plan: members share nodes by room, fullest node first") {
  Fleet fleet;
  fleet.add_block("nn-a", 3);
  fleet.use(1, 6);  // 2 free: one 2-GPU member
  fleet.use(2, 4);  // 4 free: two
  PodRequest pod = member(2, "5");
  pod.group.required_topology = "topology.k8s.aws/network-node-layer-3";
  const GroupPlan p = plan(fleet, pod, 5);
  REQUIRE(p.planned);
  CHECK(p.slots == std::vector<std::string>{"nn-a-node-1", "nn-a-node-2", "nn-a-node-2", "nn-a-node-0", "nn-a-node-0"});
}

TEST_CASE("group plan: the rest of a group stays in its bound members' domain when they fit there") {
  Fleet fleet;
  fleet.add_block("nn-a", 2);  // the best fit for 2 members: 0 free left, against nn-b's 8
  fleet.add_block("nn-b", 5);
  fleet.use(2, 8);
  fleet.use(3, 8);  // two members bound in nn-b
  PodRequest pod = member(8);
  pod.group.required_topology = "topology.k8s.aws/network-node-layer-3";
  CHECK(plan(fleet, pod, 2).domains == std::vector<std::string>{"z1/nn-1/nn-2/nn-a"});
  const GroupPlan p = plan(fleet, pod, 2, {&fleet.nodes[2], &fleet.nodes[3]});
  CHECK(p.domains == std::vector<std::string>{"z1/nn-1/nn-2/nn-b"});
  CHECK(p.slots == std::vector<std::string>{"nn-b-node-2", "nn-b-node-3"});
}

TEST_CASE("group plan: with no constraint, the finest level above the hostname that the nodes carry") {
  Fleet fleet;
  for (const char* block : {"nn-a", "nn-b"}) fleet.add_block(block, 4);
  GroupPlan p = plan(fleet, member(8), 4);
  REQUIRE(p.planned);
  CHECK(p.level_label == "topology.k8s.aws/network-node-layer-3");
  // Nodes with no topology label at all (the hostname is no domain of a group): anywhere, all or nothing.
  for (NodeView& n : fleet.nodes) n.topology = {};
  p = plan(fleet, member(8), 4);
  REQUIRE(p.planned);
  CHECK(p.level_label.empty());
  CHECK(p.spread_label == "kubernetes.io/hostname");
  CHECK(p.slots.size() == 4);
}
