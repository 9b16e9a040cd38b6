// Filter 2: memory per GPU (node label, MiB) must be at least what the pod asks for (annotation, MiB).
// Unresolvable: a node's GPU memory does not change by evicting pods.
#include "gpu_extender/quantity.h"
#include "reason.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuMemoryPredicate final : public Predicate {
 public:
  explicit GpuMemoryPredicate(std::vector<std::string> labels) : labels_(std::move(labels)) {}
  std::string_view name() const override { return "gpuMemory"; }

  Fit check(const PodRequest& pod, const NodeInput& input, std::string& reason) const override {
    if (!pod.gpu_memory_mib || *pod.gpu_memory_mib == 0) return Fit::kPass;
    const int64_t wanted = *pod.gpu_memory_mib;
    const auto& label = input.node->gpu_memory;
    if (!label)
      return refuse(reason, Fit::kUnresolvable, "node has no ", label_names(labels_), " label; pod requests ", wanted,
                    " MiB per GPU");
    std::string error;
    const std::optional<int64_t> have = parse_mebibytes(*label, &error);
    if (!have)
      return refuse(reason, Fit::kUnresolvable, "node label ", labels_[input.node->gpu_memory_label],
                    " is not a memory size: ", error);
    if (*have >= wanted) return Fit::kPass;
    return refuse(reason, Fit::kUnresolvable, "gpu memory ", *have, " MiB per GPU is below requested ", wanted, " MiB");
  }

 private:
  std::vector<std::string> labels_;
};

}  // namespace

std::unique_ptr<Predicate> make_gpu_memory_predicate(const PolicyConfig& config) {
  return std::make_unique<GpuMemoryPredicate>(config.schema.node_gpu_memory_labels);
}

}  // namespace gpu_extender::rules
