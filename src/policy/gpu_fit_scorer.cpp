// GPU fit, from the GPU design document: score = 100 - |gpus - request| * 10, floored at 0, where
// gpus is the node's free GPUs when usage is known, else its GPU count. A node whose GPUs the pod
// uses exactly scores 100; every spare or missing GPU costs 10, so big nodes stay free for big pods.
// On a time-sliced node, gpus is counted in whole GPUs: the GPU resource (in shares) / replicas.
#include <cmath>
#include <cstdlib>

#include "gpu_inventory.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class GpuFitScorer final : public Scorer {
 public:
  std::string_view name() const override { return "gpuFit"; }
  bool applies(const PodRequest& pod) const override { return pod.wants_gpus(); }

  void score(const PodRequest& pod, std::span<const NodeInput> nodes, std::span<double> out) const override {
    const int64_t wanted = milli_to_units_ceil(pod.gpus_milli());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const GpuInventory inv = gpu_inventory(nodes[i]);
      // A time-sliced node offers each GPU `replicas` times over: it is ranked by its whole GPUs, so
      // that a one-share pod still prefers the small node to eight shared GPUs.
      const double gpus = static_cast<double>(inv.free().value_or(inv.total.value_or(0))) /
                          static_cast<double>(inv.replicas);
      const double raw = 100.0 - std::abs(gpus - static_cast<double>(wanted)) * 10.0;
      out[i] = raw > 0 ? raw : 0.0;
    }
  }
};

}  // namespace

std::unique_ptr<Scorer> make_gpu_fit_scorer(const PolicyConfig&) { return std::make_unique<GpuFitScorer>(); }

}  // namespace gpu_extender::rules
