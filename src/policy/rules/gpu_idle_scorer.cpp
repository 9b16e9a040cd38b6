// GPU idleness, from the GPU design document: score = (1 - utilisation) * 100. Utilisation is the live
// value from Prometheus when fresh (--prometheus-url), else the node annotation written by a metrics
// agent (a fraction 0..1; values outside are clamped, text that is not a number is ignored), else GPUs
// in use / GPUs where usage is known, else 0.
#include <charconv>

#include "policy/gpu_inventory.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

std::optional<double> parse_fraction(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value != value) return std::nullopt;
  return value < 0 ? 0.0 : (value > 1 ? 1.0 : value);
}

class GpuIdleScorer final : public Scorer {
 public:
  explicit GpuIdleScorer(const ViewSchema& schema) : schema_(schema) {}
  std::string_view name() const override { return "gpuIdle"; }
  // MIG slices share their GPU's engines' clocks and power: a busy node is busy for them too.
  bool applies(const PodFacts& pod) const override { return wants_gpus_or_slices(pod, schema_); }

  void score(const PodFacts&, std::span<const NodeInput> nodes, std::span<double> out) const override {
    for (size_t i = 0; i < nodes.size(); ++i) {
      double utilisation = 0;
      std::optional<double> annotated = nodes[i].live_gpu_utilization;
      if (!annotated && nodes[i].node->gpu_utilization) annotated = parse_fraction(*nodes[i].node->gpu_utilization);
      if (annotated) {
        utilisation = *annotated;
      } else {
        const GpuInventory inv = gpu_inventory(nodes[i]);
        if (inv.total && *inv.total > 0 && inv.used)
          utilisation = std::min(1.0, static_cast<double>(*inv.used) / static_cast<double>(*inv.total));
      }
      out[i] = (1.0 - utilisation) * 100.0;
    }
  }

 private:
  ViewSchema schema_;
};

}  // namespace

std::unique_ptr<Scorer> make_gpu_idle_scorer(const PolicyConfig& config) {
  return std::make_unique<GpuIdleScorer>(config.schema);
}

}  // namespace gpu_extender::rules
