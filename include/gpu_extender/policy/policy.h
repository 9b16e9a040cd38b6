#pragma once
// The scheduling policy: predicates (filters) and scorers composed from a PolicyConfig.
//
// Shaped like kube-scheduler's noderesources plugins: each predicate and scorer is one small class in
// its own file, a pure function of the pod request and a node view (and the node's usage when known);
// the registry (registry.cpp) maps configuration names to them; the HTTP layer never sees them.
//
// Thread-safe: a Policy is immutable once built and is shared by all request threads.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/common/node_view.h"
#include "gpu_extender/common/pod_request.h"
#include "gpu_extender/policy/score_scaling.h"
#include "gpu_extender/policy/policy_config.h"
#include "gpu_extender/common/verdict.h"

namespace gpu_extender {

// A node as the policy sees it: its view, and what is in use on it when that is known. Both are
// pointed to, not copied (usage is ~200 bytes: prioritize hands the scorers 5,000 inputs), and must
// outlive the input.
struct NodeInput {
  NodeInput() = default;
  NodeInput(const NodeView* n, const ResourceAmounts* u) : node(n), used(u) {}
  NodeInput(const NodeView* n, const std::optional<ResourceAmounts>& u) : node(n), used(u ? &*u : nullptr) {}
  NodeInput(const NodeView* n, std::nullopt_t) : node(n) {}
  NodeInput(const NodeView*, std::optional<ResourceAmounts>&&) = delete;  // would point to a temporary
  const NodeView* node = nullptr;
  const ResourceAmounts* used = nullptr;  // null: usage unknown (no cluster view)
  std::optional<double> live_gpu_utilization;  // 0..1, fresh from Prometheus (see gpu_utilization.h)
};

struct PredicateResult {
  Fit fit = Fit::kPass;
  std::string reason;
  static PredicateResult pass() { return {}; }
};

class Predicate {
 public:
  virtual ~Predicate() = default;
  virtual std::string_view name() const = 0;
  // The verdict on one node; when it is not kPass, why, appended to `reason` (empty on entry, and
  // left empty on a pass). The buffer is reused across requests: build reasons in place (reason.h).
  virtual Fit check(const PodFacts& pod, const NodeInput& node, std::string& reason) const = 0;
  // The same as a value (tests, tools).
  PredicateResult evaluate(const PodFacts& pod, const NodeInput& node) const {
    PredicateResult result;
    result.fit = check(pod, node, result.reason);
    return result;
  }
};

class Scorer {
 public:
  virtual ~Scorer() = default;
  virtual std::string_view name() const = 0;
  // Whether this scorer has an opinion on the pod (a GPU scorer has none on a pod without GPUs).
  virtual bool applies(const PodFacts& pod) const = 0;
  // Raw scores 0..100 for every node, written to out[i]. Sees all nodes at once, so it can normalise
  // across them (as kube-scheduler's NormalizeScore does).
  virtual void score(const PodFacts& pod, std::span<const NodeInput> nodes, std::span<double> out) const = 0;
  // Whether a node's raw score depends on the pod and that node alone (not on the other nodes of the
  // request): then a caller may keep it for as long as neither changes (see Policy::score_alone).
  virtual bool per_node() const { return true; }
};

// Every number behind a prioritize answer, for /prioritize and for explanations.
struct ScoreSheet {
  struct Column {
    std::string_view scorer;
    int weight = 0;
    bool applied = false;
    std::vector<double> raw;  // 0..100 per node
  };
  std::vector<Column> columns;
  std::vector<double> combined;  // weighted mean of the applied columns, 0..100
  std::vector<int64_t> final;    // 0..10, what the scheduler receives
  ScoreOrder order;              // scale_scores' working space
};

class Policy {
 public:
  // Builds the predicates and scorers the configuration names. Throws PolicyError.
  static std::shared_ptr<const Policy> build(PolicyConfig config);

  const PolicyConfig& config() const { return config_; }
  const ViewSchema& schema() const { return config_.schema; }

  // One verdict per node, in order. A node failing any unresolvable predicate is unresolvable (no
  // preemption can help it); otherwise the first failing predicate's reason is given.
  void filter(const PodFacts& pod, std::span<const NodeInput> nodes, std::vector<NodeVerdict>& out) const;
  // Scores for every node, in order.
  void score(const PodFacts& pod, std::span<const NodeInput> nodes, ScoreSheet& sheet) const;

  // The same in two steps, for a caller that keeps raw scores from one request to the next (names
  // mode: between two pods of one kind only the nodes bound to have changed). score_alone: the raw
  // scores of the per-node scorers that apply to the pod, raw[i * scorer_count() + s] for node i and
  // scorer s (other scorers' entries are left as they were). score with `alone`: every node's scores,
  // taking the per-node scorers' raw scores from `alone` (laid out as score_alone writes them,
  // whether computed now or kept) and computing the others.
  size_t scorer_count() const { return scorers_.size(); }
  void score_alone(const PodFacts& pod, std::span<const NodeInput> nodes, std::span<double> raw,
                   std::vector<double>& scratch) const;
  void score(const PodFacts& pod, std::span<const NodeInput> nodes, ScoreSheet& sheet,
             std::span<const double> alone) const;
  // Whether every scorer that applies to `pod` is per-node: a node's combined score is then its own,
  // and a caller may keep that too (combine gives it, as score computes it, from the node's raw
  // scores laid out as score_alone writes them).
  bool scores_nodes_alone(const PodFacts& pod) const;
  double combine(const PodFacts& pod, std::span<const double> raw_of_node) const;
  // Combined scores (0..100) to the scheduler's 0..10, by the configured scaling.
  void scale(std::span<const double> combined, std::vector<int64_t>& final, ScoreOrder& order) const;

 private:
  PolicyConfig config_;
  std::vector<std::unique_ptr<Predicate>> predicates_;
  std::vector<std::pair<std::unique_ptr<Scorer>, int>> scorers_;
};

}  // namespace gpu_extender
