#pragma once
// DRA device taints (a ResourceSlice device's spec.devices[].taints, set by the driver: NVIDIA's taints a
// GPU that raised an XID error) and a claim request's tolerations of them, as the scheduler's allocator
// matches them (k8s.io/dynamic-resource-allocation/resourceclaim.ToleratesTaint). A NoSchedule or
// NoExecute taint keeps a device from every claim that does not tolerate it; "None" (1.35+) only informs.
#include <string>
#include <vector>

namespace gpu_extender {

struct DeviceTaint {
  std::string key, value, effect;
  bool operator==(const DeviceTaint&) const = default;
  // Whether the allocator keeps the device from claims that do not tolerate it.
  bool prevents_allocation() const { return effect == "NoSchedule" || effect == "NoExecute"; }
};

struct DeviceToleration {
  std::string key, op, value, effect;  // op: "Equal" (or empty) or "Exists"
  bool operator==(const DeviceToleration&) const = default;
  bool tolerates(const DeviceTaint& taint) const {
    if (!effect.empty() && effect != taint.effect) return false;
    if (!key.empty() && key != taint.key) return false;
    if (op.empty() || op == "Equal") return value == taint.value;
    return op == "Exists";
  }
};

// Whether `tolerations` tolerate every taint of `taints` that prevents allocation.
inline bool tolerates_all(const std::vector<DeviceToleration>& tolerations, const std::vector<DeviceTaint>& taints) {
  for (const DeviceTaint& taint : taints) {
    if (!taint.prevents_allocation()) continue;
    bool tolerated = false;
    for (const DeviceToleration& t : tolerations) tolerated = tolerated || t.tolerates(taint);
    if (!tolerated) return false;
  }
  return true;
}

}  // namespace gpu_extender
