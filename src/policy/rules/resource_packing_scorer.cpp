// Packing of the packed resource (custom.resource/aaa), from the extended-resources design document:
// prefer the node where the most is already in use (an absolute amount, not a ratio); among equals,
// the node with the most of it. Lexicographic, normalised over the nodes of the request:
//
//   score = 100 * (used + capacity / (max_capacity + 1)) / (max_used + 1)
//
// capacity / (max_capacity + 1) < 1, so one more unit in use always outweighs any capacity difference.
// Usage unknown counts as nothing in use.
#include <algorithm>

#include "rules.h"

namespace gpu_extender::rules {
namespace {

class ResourcePackingScorer final : public Scorer {
 public:
  std::string_view name() const override { return "resourcePacking"; }
  bool applies(const PodFacts& pod) const override { return pod.wants_packed_resource(); }
  bool per_node() const override { return false; }  // normalised by the request's largest use and capacity

  void score(const PodFacts&, std::span<const NodeInput> nodes, std::span<double> out) const override {
    constexpr size_t r = ViewSchema::kPackedResource;
    double max_used = 0, max_capacity = 0;
    auto used_of = [](const NodeInput& n) {
      return n.used && n.used->has(r) ? static_cast<double>(n.used->get(r)) / 1000.0 : 0.0;
    };
    auto capacity_of = [](const NodeInput& n) {
      return static_cast<double>(n.node->offered(r).value_or(0)) / 1000.0;
    };
    for (const NodeInput& n : nodes) {
      max_used = std::max(max_used, used_of(n));
      max_capacity = std::max(max_capacity, capacity_of(n));
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      const double key = used_of(nodes[i]) + capacity_of(nodes[i]) / (max_capacity + 1.0);
      out[i] = 100.0 * key / (max_used + 1.0);
    }
  }
};

}  // namespace

std::unique_ptr<Scorer> make_resource_packing_scorer(const PolicyConfig&) {
  return std::make_unique<ResourcePackingScorer>();
}

}  // namespace gpu_extender::rules
