#pragma once
// Why each node won or lost: every predicate's verdict, every scorer's raw score and weight, the
// combined and final scores, best first. The same evaluation /filter and /prioritize do: the nodes that
// pass are scored together (as the scheduler sends only those to prioritize); refused nodes get none.
// Thread-safe: pure functions of their inputs.
#include <span>
#include <string>
#include <vector>

#include "gpu_extender/policy/group_plan.h"
#include "gpu_extender/policy/policy.h"

namespace gpu_extender {

struct NodeExplanation {
  std::string node;
  NodeVerdict verdict;
  struct Score {
    std::string scorer;
    int weight = 0;
    bool applied = false;
    double raw = 0;
  };
  std::vector<Score> scores;  // empty for refused nodes
  double combined = 0;        // weighted mean of the applied scorers, 0..100
  int64_t final_score = -1;   // 0..10; -1 for refused nodes
  // The node's GPU facts as read, and the label each came from (hand-set or GPU Feature Discovery), or
  // "resourceslices of <driver>" on a DRA node; with the cluster view, a DRA node's GPUs and claims too.
  struct Fact {
    std::string name;   // gpuModel, gpuMemory, gpuCount
    std::string value;
    std::string label;
  };
  std::vector<Fact> facts;
};

// A group member's group (group_plan.h): its constraint, the domains considered with their room, the
// choice and each member's planned node. Offline, and live before the group is planned, the plan the
// pod would get now; live once planned, the group book's plan with the slots members took.
struct GroupExplanation {
  std::string group;       // "group team-a/llama (4 pods x 8 nvidia.com/gpu)"
  std::string constraint;  // "required topology.k8s.aws/network-node-layer-3", "preferred ...", "none: ..."
  std::string error;       // the pod's group annotations are not understood
  GroupPlan plan;
  bool live = false;       // the group book's plan (held), not one made for this explanation
  size_t bound = 0;        // live: members bound
  size_t passed = 0;       // live: members bound, binding or waiting at the gate
  std::string stage;       // live: waiting, planned, gathering, binding (group_book.h)
  std::vector<std::pair<std::string, std::string>> slots;  // live: node, and the member that took it ("" open)
  // Live, group preemption (group_preemption.h): the domain room is being made in, its victims
  // ("namespace/name") and how many are still to leave; or, when none could be chosen, why.
  std::string preempt_domain;
  std::vector<std::string> victims;
  size_t victims_left = 0;
  std::string preemption_note;
};

// The group explanation of `pod` over `nodes`, when it is in a group: the plan it would get now.
std::optional<GroupExplanation> explain_group(const Policy& policy, const PodRequest& pod, std::span<const NodeInput> nodes);
std::string render_group_table(const GroupExplanation& g);
void append_group_json(std::string& out, const GroupExplanation& g);

struct Explanation {
  std::string pod;                     // namespace/name
  std::string placement;               // binpack or spread (the pod's placement annotation)
  std::optional<GroupExplanation> group;
  std::vector<NodeExplanation> nodes;  // best first: passing by final, combined, name; then refused by name
};

Explanation explain(const Policy& policy, const PodRequest& pod, std::span<const NodeInput> nodes);

// The best passing node under the deterministic tie rule (final score, then combined score, then the
// smallest name), or nullptr when none passes.
const NodeExplanation* best_node(const Explanation& e);

std::string render_explanation_table(const Explanation& e);
// The same in a few sentences, for a person asking why a pod is pending: where it would go, or why no
// node takes it (the refusals counted by rule, one reason of each), and its group's plan.
std::string render_explanation_words(const Explanation& e);
std::string render_explanation_json(const Explanation& e);

}  // namespace gpu_extender
