// Filter 4: never place a pod on a node that offers an excluded resource (custom.resource/bbb by
// default: "never place on a node that has bbb"). A pod that itself requests the excluded resource is
// exempt: it cannot run anywhere else. Unresolvable: evictions do not remove a node's resources.
#include "gpu_extender/common/quantity.h"
#include "policy/reason.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

class ExcludedResourcesPredicate final : public Predicate {
 public:
  explicit ExcludedResourcesPredicate(const ViewSchema& schema) : schema_(schema) {}
  std::string_view name() const override { return "excludedResources"; }

  Fit check(const PodFacts& pod, const NodeInput& input, std::string& reason) const override {
    for (size_t i = ViewSchema::kFirstExcludedResource; i < schema_.first_mig_resource(); ++i) {
      const auto offered = input.node->offered(i);
      if (!offered || *offered <= 0 || pod.requested(i) > 0) continue;
      return refuse(reason, Fit::kUnresolvable, "node offers ", schema_.resources.name(i), " (", Milli{*offered},
                    "), which the policy excludes");
    }
    return Fit::kPass;
  }

 private:
  ViewSchema schema_;
};

}  // namespace

std::unique_ptr<Predicate> make_excluded_resources_predicate(const PolicyConfig& config) {
  return std::make_unique<ExcludedResourcesPredicate>(config.schema);
}

}  // namespace gpu_extender::rules
