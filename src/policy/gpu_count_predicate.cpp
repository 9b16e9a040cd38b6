// Filter 3: the node must have as many GPUs as the pod requests. More than the node has at all is
// unresolvable; more than are free right now (usage known) is resolvable: preemption could free them.
#include "gpu_inventory.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuCountPredicate final : public Predicate {
 public:
  explicit GpuCountPredicate(std::string resource) : resource_(std::move(resource)) {}
  std::string_view name() const override { return "gpuCount"; }

  PredicateResult check(const PodRequest& pod, const NodeInput& input) const override {
    if (!pod.wants_gpus()) return PredicateResult::pass();
    const int64_t wanted = milli_to_units_ceil(pod.gpus_milli());
    const GpuInventory inv = gpu_inventory(input);
    if (!inv.total || *inv.total == 0) {
      return {Fit::kUnresolvable, "node offers no " + resource_ + "; pod requests " + std::to_string(wanted)};
    }
    if (wanted > *inv.total) {
      return {Fit::kUnresolvable, "node has " + std::to_string(*inv.total) + " GPUs; pod requests " +
                                      std::to_string(wanted)};
    }
    if (auto free = inv.free(); free && wanted > *free) {
      return {Fit::kResolvable, "only " + std::to_string(*free) + " of " + std::to_string(*inv.total) +
                                    " GPUs free; pod requests " + std::to_string(wanted)};
    }
    return PredicateResult::pass();
  }

 private:
  std::string resource_;
};

}  // namespace

std::unique_ptr<Predicate> make_gpu_count_predicate(const PolicyConfig& config) {
  return std::make_unique<GpuCountPredicate>(config.schema.resources.name(ViewSchema::kGpuResource));
}

}  // namespace gpu_extender::rules
