#pragma once
// Helpers for the predicate and scorer tests: build a rule from the default policy and run it.
#include "../test_support.h"
#include "policy/rules/rules.h"

namespace rule_support {

inline const gpu_extender::PolicyConfig& config() {
  static const gpu_extender::PolicyConfig c = gpu_extender::default_policy_config();
  return c;
}

inline gpu_extender::PredicateResult check(const gpu_extender::Predicate& p, const gpu_extender::PodRequest& pod,
                                           const gpu_extender::NodeView& node,
                                           std::optional<gpu_extender::ResourceAmounts> used = std::nullopt) {
  return p.evaluate(pod, gpu_extender::NodeInput{&node, used});  // `used` outlives the call
}

inline std::vector<double> score(const gpu_extender::Scorer& s, const gpu_extender::PodRequest& pod,
                                 const std::vector<gpu_extender::NodeInput>& nodes) {
  std::vector<double> out(nodes.size(), -1);
  s.score(pod, nodes, out);
  return out;
}

}  // namespace rule_support
