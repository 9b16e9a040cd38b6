// Filter 3: the node must have as many GPUs as the pod requests. More than the node has at all is
// unresolvable; more than are free right now (usage known) is resolvable: preemption could free them.
#include "gpu_inventory.h"
#include "reason.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuCountPredicate final : public Predicate {
 public:
  explicit GpuCountPredicate(std::string resource) : resource_(std::move(resource)) {}
  std::string_view name() const override { return "gpuCount"; }

  Fit check(const PodRequest& pod, const NodeInput& input, std::string& reason) const override {
    if (!pod.wants_gpus()) return Fit::kPass;
    const int64_t wanted = milli_to_units_ceil(pod.gpus_milli());
    const GpuInventory inv = gpu_inventory(input);
    if (!inv.total || *inv.total == 0)
      return refuse(reason, Fit::kUnresolvable, "node offers no ", resource_, "; pod requests ", wanted);
    if (wanted > *inv.total)
      return refuse(reason, Fit::kUnresolvable, "node has ", *inv.total, " GPUs; pod requests ", wanted);
    if (auto free = inv.free(); free && wanted > *free)
      return refuse(reason, Fit::kResolvable, "only ", *free, " of ", *inv.total, " GPUs free; pod requests ", wanted);
    return Fit::kPass;
  }

 private:
  std::string resource_;
};

}  // namespace

std::unique_ptr<Predicate> make_gpu_count_predicate(const PolicyConfig& config) {
  return std::make_unique<GpuCountPredicate>(config.schema.resources.name(ViewSchema::kGpuResource));
}

}  // namespace gpu_extender::rules
