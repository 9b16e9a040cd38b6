// Filter 2: memory per GPU (node label, MiB) must be at least what the pod asks for (annotation, MiB).
// Unresolvable: a node's GPU memory does not change by evicting pods.
#include "gpu_extender/quantity.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuMemoryPredicate final : public Predicate {
 public:
  explicit GpuMemoryPredicate(std::string label) : label_(std::move(label)) {}
  std::string_view name() const override { return "gpuMemory"; }

  PredicateResult check(const PodRequest& pod, const NodeInput& input) const override {
    if (!pod.gpu_memory_mib || *pod.gpu_memory_mib == 0) return PredicateResult::pass();
    const std::string wanted = std::to_string(*pod.gpu_memory_mib) + " MiB";
    const auto& label = input.node->gpu_memory;
    if (!label) {
      return {Fit::kUnresolvable, "node has no " + label_ + " label; pod requests " + wanted + " per GPU"};
    }
    std::string error;
    const std::optional<int64_t> have = parse_mebibytes(*label, &error);
    if (!have) return {Fit::kUnresolvable, "node label " + label_ + " is not a memory size: " + error};
    if (*have >= *pod.gpu_memory_mib) return PredicateResult::pass();
    return {Fit::kUnresolvable,
            "gpu memory " + std::to_string(*have) + " MiB per GPU is below requested " + wanted};
  }

 private:
  std::string label_;
};

}  // namespace

std::unique_ptr<Predicate> make_gpu_memory_predicate(const PolicyConfig& config) {
  return std::make_unique<GpuMemoryPredicate>(config.schema.node_gpu_memory_label);
}

}  // namespace gpu_extender::rules
