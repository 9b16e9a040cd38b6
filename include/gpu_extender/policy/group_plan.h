#pragma once
// Distributed jobs: a group of pods (one all-reduce job's workers) placed whole, in one network domain,
// or not at all. This is the pure part, shared by the service (through the group book, which holds the
// room) and the offline tools: what a pod says of its group, the node's domain at a topology level,
// and the plan for the members still to place.
//
// The algorithm, as Kueue's TAS (BestFit) and KAI choose a domain:
//   1. each candidate node's room: how many more members fit there at once (the same predicates each
//      member faces, over usage with in-flight placements, members counted one on top of another);
//   2. domains of the constraint's level, each the sum of its nodes' room; those that hold every member;
//   3. the best fit: the fewest free GPUs left in the domain after the group, then the domain already
//      more used, then by name; members planned on its nodes fullest first;
//   4. required level and no domain holds the group: nothing planned, with a reason; preferred: the next
//      level up, and so on, then the whole cluster, spanning as few domains of the preferred level as it
//      can (still all or nothing).
// Thread-safe: pure functions of their inputs.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/policy/policy.h"

namespace gpu_extender {

// The path of a node's topology values from the top down to `level` (the levels it carries, joined by
// '/'), or "" when the node does not carry `level` itself.
std::string domain_of(const NodeView& node, size_t level);
// The same path with the label each value came from, for explanations: "us-east-1a (topology.kubernetes.io/zone) / ...".
std::string describe_domain_path(const NodeView& node, const ViewSchema& schema);

// A group's constraint: one domain of `level` (required) or as close as it can (preferred).
struct GroupConstraint {
  enum class Kind : uint8_t { kRequired, kPreferred, kDefault };  // kDefault: neither annotation given
  Kind kind = Kind::kDefault;
  size_t level = 0;  // index into ViewSchema::node_topology_labels; for kDefault, chosen at planning
};

// What a member says of its group, checked: who, how many, where.
struct GroupSpec {
  std::string key;  // namespace/name
  int64_t size = 0;
  GroupConstraint constraint;
  // Why the member's group annotations cannot be understood, naming the annotation ("" when they can):
  // the member is refused on every node with it. Data, as PodRequest::invalid_reason is: the pod is
  // still a member of `key`.
  std::string invalid_reason;
};

// The group pod `pod` belongs to, or nullopt when it is in none (or in one of Kubernetes' own pod
// groups, spec.schedulingGroup / spec.workloadRef: the scheduler places those whole itself). A pod whose group annotations cannot
// be understood (no size, a size that is no positive number, a level the policy does not list) gets a
// spec with its key and invalid_reason.
std::optional<GroupSpec> group_spec_of(const PodRequest& pod, const ViewSchema& schema);

// A domain considered, with what it has for the group.
struct DomainRoom {
  std::string domain;     // the path (domain_of)
  int64_t room = 0;       // members that fit in it at once
  int64_t free_gpus = 0;  // whole GPUs free in it now (over the candidates)
  int64_t used_gpus = 0;
};

struct GroupPlan {
  bool planned = false;
  std::string reason;  // why not, when not planned
  // The level the plan keeps to (its label), or "" when the group spans the cluster: then the domains
  // of `spread_label` it spans, fewest first.
  std::string level_label, spread_label;
  std::vector<std::string> domains;     // chosen: one, or several when spread over the cluster
  std::vector<DomainRoom> considered;   // the domains of the last level tried, best first (at most 16)
  std::vector<std::string> slots;       // a node for each member to place, in plan order
};

struct GroupPlanRequest {
  const Policy* policy = nullptr;
  const GroupSpec* spec = nullptr;
  const PodFacts* member = nullptr;     // what each member asks (members of one group are alike)
  std::span<const NodeInput> nodes;     // the candidates, with usage (in-flight placements included)
  int64_t needed = 0;                   // members still to place (size minus those bound)
  // Where the bound members are (the caller keeps the nodes): the plan stays in their domain if it can.
  std::vector<const NodeView*> bound_nodes;
};

GroupPlan plan_group(const GroupPlanRequest& request);

// How many members (alike: `member`) fit on the node at once, up to `cap`: the policy's verdict on the
// last with the others counted on the node. What planning and group preemption count a node's room by.
int64_t members_room(const Policy& policy, const PodFacts& member, const NodeInput& in, int64_t cap);

// "group team-a/llama (4 pods x 8 nvidia.com/gpu)": for reasons and logs.
std::string describe_group(const GroupSpec& spec, const PodFacts& member, int64_t needed, const ViewSchema& schema);

}  // namespace gpu_extender
