#pragma once
// GPU sharing by memory, as gpushare's device plugin presents it: a node offers its GPUs' memory
// together (aliyun.com/gpu-mem, in GiB or MiB) and their count (aliyun.com/gpu-count); each device
// has total / count. A pod's shared memory goes on one device. What each device holds comes from the
// pods bound there (their device annotation) and the extender's own placements in flight, counted in
// ResourceAmounts' device slots (resources.h). One definition of a node's devices and of the device a
// pod takes, for the filter, the scorer, /bind and simulate alike. Thread-safe: pure functions.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "gpu_extender/policy/policy.h"

namespace gpu_extender {

struct SharedGpus {
  int64_t devices = 0;           // devices used for sharing (the node's count, at most kMaxSharedGpuDevices)
  int64_t reported_devices = 0;  // the node's count as reported
  int64_t per_device = 0;        // memory of one device, in the policy's unit
  bool usage_known = false;      // free[] counts pods; else every device counts as empty
  std::array<int64_t, kMaxSharedGpuDevices> free{};  // per device, in the policy's unit; may be < 0
};

// The node's shared GPUs, or nullopt when it offers no shared memory or no devices.
std::optional<SharedGpus> shared_gpus(const NodeInput& input);

// The device a pod asking `wanted` units takes: binpack the one with the least free memory that fits,
// spread the one with the most; the lowest index among equals. -1 when none has room.
int choose_shared_gpu(const SharedGpus& gpus, int64_t wanted, Placement placement);

// Places the shared memory in `requests` (a pod's) on a device of `input`'s node, as /bind and simulate
// do: chooses the device and counts the memory in its slot of `requests`. Returns the device, or -1
// when the node has none with room (requests unchanged). For pods that ask shared memory.
int assign_shared_gpu(const NodeInput& input, Placement placement, ResourceAmounts& requests);

// Whole units of shared memory the pod asks (its request, rounded up).
int64_t shared_gpu_units_wanted(const PodFacts& pod);

// "free 4/16, 16/16 GiB" style summary of each device, for explain and reasons.
std::string describe_shared_gpus(const SharedGpus& gpus, const std::string& unit);

}  // namespace gpu_extender
