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
  static const std::map<std::string, PredicateFactory> registry = {
      {"gpuModel", make_gpu_model_predicate},
      {"gpuMemory", make_gpu_memory_predicate},
      {"gpuCount", make_gpu_count_predicate},
      {"excludedResources", make_excluded_resources_predicate},
      {"packedResourceFit", make_packed_resource_fit_predicate},
      {"gpuShare", make_gpu_share_predicate},
  };
  return registry;
}

const std::map<std::string, ScorerFactory>& scorer_registry() {
  static const std::map<std::string, ScorerFactory> registry = {
      {"gpuFit", make_gpu_fit_scorer},
      {"gpuIdle", make_gpu_idle_scorer},
      {"resourcePacking", make_resource_packing_scorer},
      {"gpuShare", make_gpu_share_scorer},
  };
  return registry;
}

std::string predicate_names() { return join_keys(predicate_registry()); }
std::string scorer_names() { return join_keys(scorer_registry()); }

}  // namespace gpu_extender::rules
