// GPU fit, from the GPU design document: score = 100 - |gpus - request| * 10, floored at 0, where
// gpus is the node's free GPUs when usage is known, else its GPU count. A node whose GPUs the pod
// uses exactly scores 100; every spare or missing GPU costs 10, so big nodes stay free for big pods.
// On a time-sliced node, gpus is counted in whole GPUs: the GPU resource (in shares) / replicas. A pod
// that requests MIG slices and no whole GPUs is ranked the same way by the slices of its (first)
// profile: the node with the fewest spare slices of that profile wins. A pod whose placement annotation
// says spread is scored the other way: 10 per GPU (or slice) left spare, at most 100.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "policy/gpu_inventory.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuFitScorer final : public Scorer {
 public:
  explicit GpuFitScorer(const ViewSchema& schema) : schema_(schema) {}
  std::string_view name() const override { return "gpuFit"; }
  bool applies(const PodFacts& pod) const override { return wants_gpus_or_slices(pod, schema_); }

  void score(const PodFacts& pod, std::span<const NodeInput> nodes, std::span<double> out) const override {
    const std::optional<size_t> profile = pod.wants_gpus() ? std::nullopt : first_mig_request(pod, schema_);
    const int64_t wanted =
        profile ? mig_slices_wanted(pod, schema_, *profile) : milli_to_units_ceil(pod.gpus_milli());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const GpuInventory inv = profile ? mig_inventory(nodes[i], schema_, *profile) : gpu_inventory(nodes[i]);
      // A time-sliced node offers each GPU `replicas` times over: it is ranked by its whole GPUs, so
      // that a one-share pod still prefers the small node to eight shared GPUs.
      const double gpus = static_cast<double>(inv.free().value_or(inv.total.value_or(0))) /
                          static_cast<double>(inv.replicas);
      // Spread (the pod's placement annotation): every GPU left spare earns 10 instead.
      const double raw = pod.placement == Placement::kSpread ? (gpus - static_cast<double>(wanted)) * 10.0
                                                             : 100.0 - std::abs(gpus - static_cast<double>(wanted)) * 10.0;
      out[i] = std::clamp(raw, 0.0, 100.0);
    }
  }

 private:
  ViewSchema schema_;
};

}  // namespace

std::unique_ptr<Scorer> make_gpu_fit_scorer(const PolicyConfig& config) {
  return std::make_unique<GpuFitScorer>(config.schema);
}

}  // namespace gpu_extender::rules
