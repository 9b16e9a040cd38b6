#pragma once
// The parts of a resource.k8s.io/v1 DeviceTaintRule (KEP-5055, GA in 1.37) the extender reads: its name,
// which devices it taints (spec.deviceSelector: driver, pool and device name, each optional; no selector
// at all selects none, an empty one every device) and the taint. The allocator treats a device a rule
// selects as carrying the rule's taint beside its slice's own (an admin's "drain this GPU").
//
// Strings other than the taint's are views into storage owned elsewhere (the parser's buffer).
#include <optional>
#include <string_view>

#include "gpu_extender/common/device_taint.h"

namespace gpu_extender {

struct DeviceTaintRuleView {
  std::string_view name;
  bool has_selector = false;  // spec.deviceSelector present (and not null)
  std::optional<std::string_view> driver, pool, device;
  DeviceTaint taint;
};

}  // namespace gpu_extender
