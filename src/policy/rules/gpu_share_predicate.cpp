// Filter gpuShare: a pod asking shared GPU memory (aliyun.com/gpu-mem) needs one device with that much
// free. More than one device has at all is unresolvable (no eviction makes a device larger); devices
// merely busy is resolvable: preemption can free one.
#include "gpu_extender/policy/gpu_share.h"
#include "policy/reason.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuSharePredicate final : public Predicate {
 public:
  explicit GpuSharePredicate(const PolicyConfig& config)
      : memory_(config.schema.resources.name(ViewSchema::kSharedGpuMemory)),
        count_(config.schema.resources.name(ViewSchema::kSharedGpuCount)),
        unit_(config.shared_gpu_memory_unit) {}
  std::string_view name() const override { return "gpuShare"; }

  Fit check(const PodFacts& pod, const NodeInput& input, std::string& reason) const override {
    if (!pod.wants_shared_gpu()) return Fit::kPass;
    const int64_t wanted = shared_gpu_units_wanted(pod);
    const std::optional<SharedGpus> gpus = shared_gpus(input);
    if (!gpus)
      return refuse(reason, Fit::kUnresolvable, "node offers no ", memory_, " and ", count_, " to share; pod requests ",
                    wanted, " ", unit_);
    if (wanted > gpus->per_device)
      return refuse(reason, Fit::kUnresolvable, "pod requests ", wanted, " ", unit_, " of one GPU; the node's GPUs have ",
                    gpus->per_device, " ", unit_, " each");
    if (choose_shared_gpu(*gpus, wanted, pod.placement) < 0)
      return refuse(reason, Fit::kResolvable, "no GPU has ", wanted, " ", unit_, " free (",
                    describe_shared_gpus(*gpus, unit_), ")");
    return Fit::kPass;
  }

 private:
  std::string memory_, count_, unit_;
};

}  // namespace

std::unique_ptr<Predicate> make_gpu_share_predicate(const PolicyConfig& config) {
  return std::make_unique<GpuSharePredicate>(config);
}

}  // namespace gpu_extender::rules
