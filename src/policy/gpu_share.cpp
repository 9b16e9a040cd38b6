#include "gpu_extender/policy/gpu_share.h"

#include "gpu_extender/common/quantity.h"

namespace gpu_extender {

std::optional<SharedGpus> shared_gpus(const NodeInput& input) {
  const auto memory = input.node->offered(ViewSchema::kSharedGpuMemory);
  const auto count = input.node->offered(ViewSchema::kSharedGpuCount);
  if (!memory || !count || *memory <= 0 || *count < 1000) return std::nullopt;
  SharedGpus out;
  out.reported_devices = *count / 1000;
  out.devices = std::min<int64_t>(out.reported_devices, kMaxSharedGpuDevices);
  out.per_device = (*memory / 1000) / out.reported_devices;  // as gpushare divides: whole units
  out.usage_known = input.used != nullptr;
  for (int64_t d = 0; d < out.devices; ++d) {
    const size_t slot = shared_gpu_device_slot(static_cast<size_t>(d));
    const int64_t used = input.used && input.used->has(slot) ? milli_to_units_ceil(input.used->get(slot)) : 0;
    out.free[static_cast<size_t>(d)] = out.per_device - used;
  }
  return out;
}

int choose_shared_gpu(const SharedGpus& gpus, int64_t wanted, Placement placement) {
  int best = -1;
  for (int64_t d = 0; d < gpus.devices; ++d) {
    const int64_t free = gpus.free[static_cast<size_t>(d)];
    if (free < wanted) continue;
    const int64_t best_free = best < 0 ? 0 : gpus.free[static_cast<size_t>(best)];
    if (best < 0 || (placement == Placement::kSpread ? free > best_free : free < best_free)) best = static_cast<int>(d);
  }
  return best;
}

int assign_shared_gpu(const NodeInput& input, Placement placement, ResourceAmounts& requests) {
  const int64_t milli = requests.has(ViewSchema::kSharedGpuMemory) ? requests.get(ViewSchema::kSharedGpuMemory) : 0;
  const std::optional<SharedGpus> gpus = shared_gpus(input);
  if (milli <= 0 || !gpus) return -1;
  const int device = choose_shared_gpu(*gpus, milli_to_units_ceil(milli), placement);
  if (device >= 0) requests.set(shared_gpu_device_slot(static_cast<size_t>(device)), milli);
  return device;
}

int64_t shared_gpu_units_wanted(const PodFacts& pod) { return milli_to_units_ceil(pod.shared_gpu_memory_milli()); }

std::string describe_shared_gpus(const SharedGpus& gpus, const std::string& unit) {
  std::string out = "free";
  for (int64_t d = 0; d < gpus.devices; ++d)
    out += (d == 0 ? " " : ", ") + std::to_string(gpus.free[static_cast<size_t>(d)]) + "/" +
           std::to_string(gpus.per_device);
  out += " " + unit;
  if (gpus.reported_devices > gpus.devices)
    out += " (devices past " + std::to_string(gpus.devices) + " of " + std::to_string(gpus.reported_devices) +
           " not shared)";
  return out;
}

}  // namespace gpu_extender
