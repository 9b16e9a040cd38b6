#include "registry.h"

namespace gpu_extender::rules {
namespace {
template <typename Map>
std::string join_keys(const Map& map) {
  std::string out;
  for (const auto& [name, factory] : map) out += (out.empty() ? "" : ", ") + name;
  return out;
}
}  // namespace

const std::map<std::string, PredicateFactory>& predicate_registry() {
#define GPU_EXTENDER_RULE_ENTRY(name, make) {name, make},
  static const std::map<std::string, PredicateFactory> registry = {GPU_EXTENDER_PREDICATES(GPU_EXTENDER_RULE_ENTRY)};
  return registry;
}

const std::map<std::string, ScorerFactory>& scorer_registry() {
  static const std::map<std::string, ScorerFactory> registry = {GPU_EXTENDER_SCORERS(GPU_EXTENDER_RULE_ENTRY)};
  return registry;
}

#undef GPU_EXTENDER_RULE_ENTRY

std::string predicate_names() { return join_keys(predicate_registry()); }
std::string scorer_names() { return join_keys(scorer_registry()); }

}  // namespace gpu_extender::rules
