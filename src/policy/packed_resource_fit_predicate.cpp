// Filter 5: a pod that requests the packed resource (custom.resource/aaa) needs that much free on the
// node: allocatable minus what is in use (when usage is known). A node without the resource, or with
// less than the request in total, is unresolvable; one whose free amount is short is resolvable.
#include "gpu_extender/quantity.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class PackedResourceFitPredicate final : public Predicate {
 public:
  explicit PackedResourceFitPredicate(std::string resource) : resource_(std::move(resource)) {}
  std::string_view name() const override { return "packedResourceFit"; }

  PredicateResult check(const PodRequest& pod, const NodeInput& input) const override {
    constexpr size_t r = ViewSchema::kPackedResource;
    const int64_t wanted = pod.requested(r);
    if (wanted <= 0) return PredicateResult::pass();
    const auto offered = input.node->offered(r);
    if (!offered || *offered <= 0) {
      return {Fit::kUnresolvable, "node offers no " + resource_ + "; pod requests " + format_milli(wanted)};
    }
    if (wanted > *offered) {
      return {Fit::kUnresolvable, "node has " + format_milli(*offered) + " " + resource_ + "; pod requests " +
                                      format_milli(wanted)};
    }
    if (input.used) {
      const int64_t used = input.used->has(r) ? input.used->get(r) : 0;
      const int64_t free = *offered > used ? *offered - used : 0;
      if (wanted > free) {
        return {Fit::kResolvable, "only " + format_milli(free) + " of " + format_milli(*offered) + " " + resource_ +
                                      " free; pod requests " + format_milli(wanted)};
      }
    }
    return PredicateResult::pass();
  }

 private:
  std::string resource_;
};

}  // namespace

std::unique_ptr<Predicate> make_packed_resource_fit_predicate(const PolicyConfig& config) {
  return std::make_unique<PackedResourceFitPredicate>(config.schema.resources.name(ViewSchema::kPackedResource));
}

}  // namespace gpu_extender::rules
