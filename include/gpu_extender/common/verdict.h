#pragma once
// The outcome of filtering one node. Thread-safe: value type.
#include <string>
#include <string_view>

namespace gpu_extender {

enum class Fit {
  kPass,
  kResolvable,    // could pass after preemption (e.g. GPUs busy): FailedNodes
  kUnresolvable,  // no eviction can fix it (e.g. wrong GPU model): FailedAndUnresolvableNodes
};

struct NodeVerdict {
  Fit fit = Fit::kPass;
  std::string reason;     // for a person: "gpu model T4 does not match requested A100"
  std::string_view rule;  // the predicate that failed it (a registry name, static storage)

  bool passed() const { return fit == Fit::kPass; }
};

}  // namespace gpu_extender
