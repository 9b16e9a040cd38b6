#pragma once
// Why each node won or lost: every predicate's verdict, every scorer's raw score and weight, the
// combined and final scores, best first. The same evaluation /filter and /prioritize do: the nodes that
// pass are scored together (as the scheduler sends only those to prioritize); refused nodes get none.
// Thread-safe: pure functions of their inputs.
#include <span>
#include <string>
#include <vector>

#include "gpu_extender/policy.h"

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
  // The node's GPU facts as read, and the label each came from (hand-set or GPU Feature Discovery).
  struct Fact {
    std::string name;   // gpuModel, gpuMemory, gpuCount
    std::string value;
    std::string label;
  };
  std::vector<Fact> facts;
};

struct Explanation {
  std::string pod;                     // namespace/name
  std::string placement;               // binpack or spread (the pod's placement annotation)
  std::vector<NodeExplanation> nodes;  // best first: passing by final, combined, name; then refused by name
};

Explanation explain(const Policy& policy, const PodRequest& pod, std::span<const NodeInput> nodes);

// The best passing node under the deterministic tie rule (final score, then combined score, then the
// smallest name), or nullptr when none passes.
const NodeExplanation* best_node(const Explanation& e);

std::string render_explanation_table(const Explanation& e);
std::string render_explanation_json(const Explanation& e);

}  // namespace gpu_extender
