#include "gpu_extender/usage/usage_source.h"

namespace gpu_extender {
namespace {

class NoUsage final : public UsageSource {
 public:
  std::optional<ResourceAmounts> used_on(std::string_view) const override { return std::nullopt; }
  std::string describe() const override { return "none (usage unknown: treated as nothing in use)"; }
};

}  // namespace

std::unique_ptr<UsageSource> make_no_usage() { return std::make_unique<NoUsage>(); }

}  // namespace gpu_extender
