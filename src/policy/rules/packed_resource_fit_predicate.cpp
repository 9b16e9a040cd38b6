// Filter 5: a pod that requests the packed resource (custom.resource/aaa) needs that much free on the
// node: allocatable minus what is in use (when usage is known). A node without the resource, or with
// less than the request in total, is unresolvable; one whose free amount is short is resolvable.
#include "gpu_extender/common/quantity.h"
#include "policy/reason.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class PackedResourceFitPredicate final : public Predicate {
 public:
  explicit PackedResourceFitPredicate(std::string resource) : resource_(std::move(resource)) {}
  std::string_view name() const override { return "packedResourceFit"; }

  Fit check(const PodFacts& pod, const NodeInput& input, std::string& reason) const override {
    constexpr size_t r = ViewSchema::kPackedResource;
    const int64_t wanted = pod.requested(r);
    if (wanted <= 0) return Fit::kPass;
    const auto offered = input.node->offered(r);
    if (!offered || *offered <= 0)
      return refuse(reason, Fit::kUnresolvable, "node offers no ", resource_, "; pod requests ", Milli{wanted});
    if (wanted > *offered) {
      return refuse(reason, Fit::kUnresolvable, "node has ", Milli{*offered}, " ", resource_, "; pod requests ",
                    Milli{wanted});
    }
    if (input.used) {
      const int64_t used = input.used->has(r) ? input.used->get(r) : 0;
      const int64_t free = *offered > used ? *offered - used : 0;
      if (wanted > free) {
        return refuse(reason, Fit::kResolvable, "only ", Milli{free}, " of ", Milli{*offered}, " ", resource_,
                      " free; pod requests ", Milli{wanted});
      }
    }
    return Fit::kPass;
  }

 private:
  std::string resource_;
};

}  // namespace

std::unique_ptr<Predicate> make_packed_resource_fit_predicate(const PolicyConfig& config) {
  return std::make_unique<PackedResourceFitPredicate>(config.schema.resources.name(ViewSchema::kPackedResource));
}

}  // namespace gpu_extender::rules
