// Filter 3: the node must have as many GPUs as the pod requests, and as many slices of each MIG profile
// it requests. More than the node has at all is unresolvable; more than are free right now (usage
// known) is resolvable: preemption could free them.
#include "policy/gpu_inventory.h"
#include "policy/reason.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuCountPredicate final : public Predicate {
 public:
  explicit GpuCountPredicate(const ViewSchema& schema) : schema_(schema) {}
  std::string_view name() const override { return "gpuCount"; }

  Fit check(const PodFacts& pod, const NodeInput& input, std::string& reason) const override {
    if (pod.wants_gpus()) {
      GpuInventory inv = gpu_inventory(input);
      // A DRA GPU kept from claims only by its device taints is counted in use; one the pod's claims
      // tolerate is free to it (possibly held by a claim too: the allocator, which runs first, decides).
      if (inv.used && !pod.device_tolerations.empty())
        for (const auto& taints : input.node->dra_tainted_gpus)
          if (*inv.used > 0 && tolerates_all(pod.device_tolerations, taints)) --*inv.used;
      const Fit fit = check_count(milli_to_units_ceil(pod.gpus_milli()), inv,
                                  schema_.resources.name(ViewSchema::kGpuResource), "GPUs", reason);
      if (fit != Fit::kPass) return fit;
    }
    for (size_t k = 0; k < schema_.mig_profiles(); ++k) {
      const int64_t wanted = mig_slices_wanted(pod, schema_, k);
      if (wanted == 0) continue;
      const std::string& resource = schema_.resources.name(schema_.mig_resource(k));
      const Fit fit = check_count(wanted, mig_inventory(input, schema_, k), resource, resource + " slices", reason);
      if (fit != Fit::kPass) return fit;
    }
    return Fit::kPass;
  }

 private:
  static Fit check_count(int64_t wanted, const GpuInventory& inv, const std::string& resource, const std::string& unit,
                         std::string& reason) {
    if (!inv.total || *inv.total == 0)
      return refuse(reason, Fit::kUnresolvable, "node offers no ", resource, "; pod requests ", wanted);
    if (wanted > *inv.total)
      return refuse(reason, Fit::kUnresolvable, "node has ", *inv.total, " ", unit, "; pod requests ", wanted);
    if (auto free = inv.free(); free && wanted > *free)
      return refuse(reason, Fit::kResolvable, "only ", *free, " of ", *inv.total, " ", unit, " free; pod requests ",
                    wanted);
    return Fit::kPass;
  }

  ViewSchema schema_;
};

}  // namespace

std::unique_ptr<Predicate> make_gpu_count_predicate(const PolicyConfig& config) {
  return std::make_unique<GpuCountPredicate>(config.schema);
}

}  // namespace gpu_extender::rules
