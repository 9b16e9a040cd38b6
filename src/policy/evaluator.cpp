// Policy: composition of the predicates and scorers a configuration names.
#include <algorithm>
#include <set>

#include "gpu_extender/policy/policy.h"
#include "gpu_extender/policy/score_scaling.h"
#include "registry.h"

namespace gpu_extender {

std::shared_ptr<const Policy> Policy::build(PolicyConfig config) {
  auto policy = std::shared_ptr<Policy>(new Policy());
  const auto& predicates = rules::predicate_registry();
  const auto& scorers = rules::scorer_registry();
  std::set<std::string> seen;
  for (const std::string& name : config.filters) {
    auto it = predicates.find(name);
    if (it == predicates.end()) {
      throw PolicyError(config.source + ": filters: unknown filter \"" + name + "\" (known: " +
                        rules::predicate_names() + ")");
    }
    if (!seen.insert("filter/" + name).second)
      throw PolicyError(config.source + ": filters: \"" + name + "\" listed twice");
    policy->predicates_.push_back(it->second(config));
  }
  for (const ScorerSpec& spec : config.scorers) {
    auto it = scorers.find(spec.name);
    if (it == scorers.end()) {
      throw PolicyError(config.source + ": scorers: unknown scorer \"" + spec.name + "\" (known: " +
                        rules::scorer_names() + ")");
    }
    if (!seen.insert("scorer/" + spec.name).second)
      throw PolicyError(config.source + ": scorers: \"" + spec.name + "\" listed twice");
    policy->scorers_.emplace_back(it->second(config), spec.weight);
  }
  policy->config_ = std::move(config);
  return policy;
}

void Policy::filter(const PodFacts& pod, std::span<const NodeInput> nodes, std::vector<NodeVerdict>& out) const {
  // Verdicts are reset, not rebuilt: a reused vector keeps each reason's buffer from the last request.
  out.resize(nodes.size());
  for (NodeVerdict& verdict : out) {
    verdict.fit = Fit::kPass;
    verdict.reason.clear();
    verdict.rule = {};
  }
  if (!pod.invalid_reason.empty()) {
    // The pod itself cannot be judged: every node refuses it, and no eviction changes that. The
    // scheduler shows the reason in the pod's events (a 400 would show only "code 400").
    for (NodeVerdict& verdict : out) {
      verdict.fit = Fit::kUnresolvable;
      verdict.reason.assign(pod.invalid_reason);
      verdict.rule = "podAnnotations";
    }
    return;
  }
  std::string later;  // a later predicate's reason, while the node already has one
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeVerdict& verdict = out[i];
    for (const auto& predicate : predicates_) {
      if (verdict.fit == Fit::kPass) {
        verdict.fit = predicate->check(pod, nodes[i], verdict.reason);
        if (verdict.fit != Fit::kPass) verdict.rule = predicate->name();
      } else {
        // Keep the first reason, unless a later predicate finds the node unresolvable: that decides
        // where the node goes (FailedAndUnresolvableNodes), so its reason is the one to give.
        later.clear();
        if (predicate->check(pod, nodes[i], later) == Fit::kUnresolvable) {
          verdict.fit = Fit::kUnresolvable;
          verdict.reason.swap(later);
          verdict.rule = predicate->name();
        }
      }
      if (verdict.fit == Fit::kUnresolvable) break;
    }
  }
}

void Policy::score(const PodFacts& pod, std::span<const NodeInput> nodes, ScoreSheet& sheet) const {
  score(pod, nodes, sheet, {});
}

void Policy::score_alone(const PodFacts& pod, std::span<const NodeInput> nodes, std::span<double> raw,
                         std::vector<double>& scratch) const {
  const size_t count = scorers_.size();
  for (size_t s = 0; s < count; ++s) {
    const auto& [scorer, weight] = scorers_[s];
    if (weight <= 0 || !scorer->per_node() || !scorer->applies(pod)) continue;
    scratch.assign(nodes.size(), 0.0);
    scorer->score(pod, nodes, scratch);
    for (size_t i = 0; i < nodes.size(); ++i) raw[i * count + s] = scratch[i];
  }
}

void Policy::score(const PodFacts& pod, std::span<const NodeInput> nodes, ScoreSheet& sheet,
                   std::span<const double> alone) const {
  sheet.columns.resize(scorers_.size());
  sheet.combined.assign(nodes.size(), 0.0);
  double total_weight = 0;
  for (size_t s = 0; s < scorers_.size(); ++s) {
    const auto& [scorer, weight] = scorers_[s];
    ScoreSheet::Column& column = sheet.columns[s];
    column.scorer = scorer->name();
    column.weight = weight;
    column.applied = weight > 0 && scorer->applies(pod);
    column.raw.assign(nodes.size(), 0.0);
    if (!column.applied) continue;
    if (!alone.empty() && scorer->per_node()) {
      for (size_t i = 0; i < nodes.size(); ++i) column.raw[i] = alone[i * scorers_.size() + s];
    } else {
      scorer->score(pod, nodes, column.raw);
    }
    total_weight += weight;
    for (size_t i = 0; i < nodes.size(); ++i) sheet.combined[i] += weight * column.raw[i];
  }
  // A pod no scorer has an opinion on gets the same (zero) score everywhere: neutral.
  if (total_weight > 0)
    for (double& value : sheet.combined) value /= total_weight;
  scale(sheet.combined, sheet.final, sheet.order);
}

bool Policy::scores_nodes_alone(const PodFacts& pod) const {
  return std::all_of(scorers_.begin(), scorers_.end(), [&](const auto& scorer_and_weight) {
    const auto& [scorer, weight] = scorer_and_weight;
    return weight <= 0 || scorer->per_node() || !scorer->applies(pod);
  });
}

double Policy::combine(const PodFacts& pod, std::span<const double> raw_of_node) const {
  // The same operations in the same order as score(), so that the two agree to the last bit.
  double combined = 0.0;
  double total_weight = 0;
  for (size_t s = 0; s < scorers_.size(); ++s) {
    const auto& [scorer, weight] = scorers_[s];
    if (weight <= 0 || !scorer->applies(pod)) continue;
    total_weight += weight;
    combined += weight * raw_of_node[s];
  }
  return total_weight > 0 ? combined / total_weight : combined;
}

void Policy::scale(std::span<const double> combined, std::vector<int64_t>& final, ScoreOrder& order) const {
  if (config_.score_scaling == ScoreScaling::kProportional) scale_scores_proportionally(combined, final);
  else scale_scores(combined, final, order);
}

}  // namespace gpu_extender
