// Filter 2: memory per GPU (node label, MiB) must be at least what the pod asks for (annotation, MiB),
// the label judged as the size the GPU is sold with (gpu_memory_size.h: NVML's 81559 is an 80 GiB H100).
// A pod that requests MIG slices asks it of each slice: the profile's <resource>.memory label, judged by
// the size the profile's name says ("1g.10gb": 10 GiB). A pod that requests only slices is not judged on
// the whole GPU's memory. Unresolvable: a node's GPU memory does not change by evicting pods.
#include <array>
#include <span>

#include "gpu_extender/common/quantity.h"
#include "gpu_extender/policy/gpu_memory_size.h"
#include "policy/gpu_inventory.h"
#include "policy/reason.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuMemoryPredicate final : public Predicate {
 public:
  explicit GpuMemoryPredicate(const ViewSchema& schema) : schema_(schema) {
    for (size_t k = 0; k < schema_.mig_profiles(); ++k)
      mig_gib_[k] = mig_profile_gib(schema_.resources.name(schema_.mig_resource(k)));
  }
  std::string_view name() const override { return "gpuMemory"; }

  Fit check(const PodFacts& pod, const NodeInput& input, std::string& reason) const override {
    if (!pod.gpu_memory_mib || *pod.gpu_memory_mib == 0) return Fit::kPass;
    const int64_t wanted = *pod.gpu_memory_mib;
    const NodeView& node = *input.node;
    bool slices = false;
    for (size_t k = 0; k < schema_.mig_profiles(); ++k) {
      if (mig_slices_wanted(pod, schema_, k) == 0) continue;
      slices = true;
      // A node with none of the profile's slices is refused by gpuCount, with the reason that says so.
      const auto offered = mig_inventory(input, schema_, k).total;
      if (!node.mig_memory[k] && (!offered || *offered == 0)) continue;
      const std::span<const int64_t> sold = mig_gib_[k] > 0 ? std::span<const int64_t>(&mig_gib_[k], 1)
                                                             : std::span<const int64_t>();
      const Fit fit =
          check_memory(wanted, node.mig_memory[k], schema_.mig_memory_labels[k], "per slice", sold, reason);
      if (fit != Fit::kPass) return fit;
    }
    if (slices && !pod.wants_gpus()) return Fit::kPass;
    const std::string& label = node.gpu_memory ? schema_.node_gpu_memory_labels[node.gpu_memory_label]
                                               : label_names(schema_.node_gpu_memory_labels);
    return check_memory(wanted, node.gpu_memory, label, "per GPU", kMarketedGpuGiB, reason);
  }

 private:
  static Fit check_memory(int64_t wanted, const std::optional<std::string_view>& value, const std::string& label,
                          const char* per, std::span<const int64_t> sold_gib, std::string& reason) {
    if (!value)
      return refuse(reason, Fit::kUnresolvable, "node has no ", label, " label; pod requests ", wanted, " MiB ", per);
    const Result<int64_t> have = parse_mebibytes(*value);
    if (!have.ok()) return refuse(reason, Fit::kUnresolvable, "node label ", label, " is not a memory size: ", have.why());
    const int64_t judged = judged_gpu_memory_mib(*have, sold_gib);
    if (judged >= wanted) return Fit::kPass;
    if (judged == *have)
      return refuse(reason, Fit::kUnresolvable, "gpu memory ", *have, " MiB ", per, " is below requested ", wanted,
                    " MiB");
    const char* size = sold_gib.data() == kMarketedGpuGiB ? "the size it is sold with" : "the size its profile names";
    return refuse(reason, Fit::kUnresolvable, "gpu memory ", *have, " MiB ", per, " (judged ", judged / 1024, " GiB, ",
                  size, ") is below requested ", wanted, " MiB");
  }

  ViewSchema schema_;
  std::array<int64_t, kMaxMigProfiles> mig_gib_{};  // per profile, the GiB its name says (0: none)
};

}  // namespace

std::unique_ptr<Predicate> make_gpu_memory_predicate(const PolicyConfig& config) {
  return std::make_unique<GpuMemoryPredicate>(config.schema);
}

}  // namespace gpu_extender::rules
