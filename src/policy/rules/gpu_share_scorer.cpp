// Scorer gpuShare, for pods asking shared GPU memory: each node is scored by the device the pod would
// take there (choose_shared_gpu). Binpack (the default): how full that device is once the pod is on
// it, 0..100, so pods fill a GPU before starting another and whole GPUs stay free for large jobs.
// Spread: how much of the node's shared memory stays free, so pods go to the emptiest node (and, at
// bind, to its emptiest device). The pod's placement annotation chooses.
#include <algorithm>

#include "gpu_extender/policy/gpu_share.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuShareScorer final : public Scorer {
 public:
  std::string_view name() const override { return "gpuShare"; }
  bool applies(const PodFacts& pod) const override { return pod.wants_shared_gpu(); }

  void score(const PodFacts& pod, std::span<const NodeInput> nodes, std::span<double> out) const override {
    const int64_t wanted = shared_gpu_units_wanted(pod);
    for (size_t i = 0; i < nodes.size(); ++i) {
      out[i] = 0;
      const std::optional<SharedGpus> gpus = shared_gpus(nodes[i]);
      if (!gpus || gpus->per_device <= 0) continue;
      const int device = choose_shared_gpu(*gpus, wanted, pod.placement);
      if (device < 0) continue;
      if (pod.placement == Placement::kSpread) {
        int64_t free = -wanted;
        for (int64_t d = 0; d < gpus->devices; ++d) free += std::max<int64_t>(gpus->free[static_cast<size_t>(d)], 0);
        out[i] = 100.0 * static_cast<double>(free) / static_cast<double>(gpus->per_device * gpus->devices);
      } else {
        const int64_t left = gpus->free[static_cast<size_t>(device)] - wanted;
        out[i] = 100.0 * (1.0 - static_cast<double>(left) / static_cast<double>(gpus->per_device));
      }
    }
  }
};

}  // namespace

std::unique_ptr<Scorer> make_gpu_share_scorer(const PolicyConfig&) { return std::make_unique<GpuShareScorer>(); }

}  // namespace gpu_extender::rules
