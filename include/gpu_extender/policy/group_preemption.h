#pragma once
// Room for a pod group that fits nowhere: the one domain where evicting pods of strictly lower priority
// makes the whole group fit, with the fewest and least important victims. The pure part; the group
// preemptor (kube/group_preemptor.h) evicts them through the Eviction API and the group book holds the
// room while they terminate.
//
// Why the extender chooses (and not kube-scheduler's PostFilter): the scheduler preempts for one pod at a
// time, on one node, where its own filters need room, by deleting the victims (PDBs only steer its
// choice); a group needs room in one domain for all its members at once. So members keep no candidate at
// /preempt (preempt.cpp) and the extender evicts for the group as a whole.
//
// The algorithm, per domain of the group's level (required: that level; preferred or none: that level,
// then each level above, then the whole cluster as one domain, as plan_group tries them):
//   1. each node's room with nothing evicted, and with every eligible victim on it gone (eligible: a
//      bound pod of strictly lower priority, not terminating, not a member of a pod group (the
//      extender's or Kubernetes' own), not refused by its PodDisruptionBudget in a dry run);
//   2. victims given back (reprieved) most important first (highest priority, then highest pod deletion
//      cost, then name) while the node keeps the room asked of it, as kube-scheduler's
//      SelectVictimsOnNode reprieves;
//   3. the free room used first, then the nodes whose victims for one more member rank best (below);
//   4. domains ranked as kube-scheduler ranks candidates (pickOneNodeForPreemption): the lowest highest
//      victim priority, then the smallest sum of priorities, then the fewest victims; then the smallest
//      sum of pod deletion costs (controller.kubernetes.io/pod-deletion-cost), then the name. PDB
//      violations, its first criterion, are none as far as dry runs tell (group_preemptor.h): a budget
//      that allows one disruption passes each dry run of the pods it covers alone.
// A required group with members bound already plans only in their domain; domains where room made
// before went unused are skipped.
// Thread-safe: a pure function of its inputs.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpu_extender/policy/group_plan.h"

namespace gpu_extender {

// A bound pod as preemption sees it.
struct PreemptionVictim {
  std::string uid, ns, name, node;
  ResourceAmounts requests;  // what it frees on its node
  int32_t priority = 0;      // spec.priority
  int64_t deletion_cost = 0;  // controller.kubernetes.io/pod-deletion-cost; 0 when absent
  std::string group;         // its pod group ("namespace/name"), "" outside groups: group members are not victims
  bool native_gang = false;  // a member of one of Kubernetes' own pod groups: not a victim either
  bool terminating = false;  // leaving already: frees its room without an eviction, counted as still there
  bool budget_refused = false;  // an eviction (dry run) was refused by its PodDisruptionBudget
};

// What preemption keeps of a bound pod that holds `holds` on its node (its requests, with the GPUs of its
// claims); null when that is no GPU, whole or shared: evicting it frees nothing a GPU group asks for.
std::shared_ptr<const PreemptionVictim> preemption_victim_of(const PodRequest& pod, const ResourceAmounts& holds);

struct GroupPreemptionRequest {
  const Policy* policy = nullptr;
  const GroupSpec* spec = nullptr;
  const PodFacts* member = nullptr;  // what each member asks
  int32_t priority = 0;              // the members' priority
  int64_t needed = 0;                // members still to place
  std::span<const NodeInput> nodes;  // every node the extender knows, with usage (in flight included)
  std::span<const PreemptionVictim> pods;  // the bound pods on those nodes
  // Where the group's bound members are: a required group stays in their one domain (never split).
  std::vector<std::string> bound_nodes;
  // Domains (domain_of paths) where room made before went unused (the scheduler's own filters refused
  // their nodes): not chosen again.
  std::vector<std::string> avoid;
};

// How a set of victims ranks (lower is better, in this order).
struct VictimRank {
  int32_t highest_priority = INT32_MIN;  // INT32_MIN: no victim
  // Each priority offset by 2^31 as kube-scheduler sums them (preemption.go), so that more victims of
  // negative priority never add up to less than fewer.
  int64_t priority_sum = 0;
  size_t count = 0;
  int64_t deletion_cost_sum = 0;
  void add(const PreemptionVictim& v);
  bool operator<(const VictimRank& other) const;
};

struct DomainPreemption {
  std::string domain;  // the path (domain_of), "" for the whole cluster
  bool feasible = false;
  VictimRank rank;
};

struct GroupPreemptionPlan {
  bool chosen = false;
  std::string reason;       // why none, when not chosen
  std::string level_label;  // the level of `domain`, "" for the whole cluster
  std::string domain;
  std::vector<std::string> slots;          // a node for each member to place, by node
  std::vector<PreemptionVictim> victims;   // to evict, by node
  // Pods already terminating on the slots' nodes: their room is counted as coming, so the group waits
  // for them as for its victims.
  std::vector<PreemptionVictim> leaving;
  VictimRank rank;
  std::vector<DomainPreemption> considered;  // the domains of the level chosen (or the last tried), best first (at most 16)
};

GroupPreemptionPlan plan_group_preemption(const GroupPreemptionRequest& request);

}  // namespace gpu_extender
