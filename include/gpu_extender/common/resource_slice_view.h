#pragma once
// The parts of a resource.k8s.io/v1 ResourceSlice (Dynamic Resource Allocation) the extender reads: the
// node its devices are on, the driver that publishes them, its pool (name, generation, how many slices
// it has), and per device the GPU facts the schema's DRA attribute names point at (ViewSchema::dra_*),
// what ties it to a physical GPU, and its taints. NVIDIA's GPU driver (driver gpu.nvidia.com, pool = the
// node's name) publishes each GPU not in MIG mode as a device "gpu-<minor>" with attributes type "gpu",
// uuid, productName, architecture ("Hopper", "Ada Lovelace") and resource.kubernetes.io/pciBusID, and
// capacity memory ("81559Mi": NVML's figure). A GPU in MIG mode has no such device, only its MIG devices
// "gpu-<minor>-mig-<profile>-<profileId>-<placementStart>" (type "mig", parentUUID, the parent's pciBusID).
// With partitionable devices (DynamicMIG) the GPU and its partitions each consume the GPU's counter set
// "gpu-<minor>-counter-set" (consumesCounters), published in the pool's own slice (sharedCounters). A GPU
// bound to vfio-pci for passthrough is "gpu-vfio-<index>" (type "vfio", the GPU's pciBusID).
//
// Every string is a view into storage owned elsewhere (the parser's buffer), valid only as long as it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/common/device_taint.h"

namespace gpu_extender {

struct DraDeviceView {
  std::string_view name;
  std::optional<std::string_view> model;         // the model attribute's string
  std::optional<std::string_view> architecture;  // the architecture attribute's string
  std::optional<std::string_view> type;          // the type attribute's string
  std::optional<int64_t> memory_bytes;           // the memory capacity's value
  std::optional<std::string_view> uuid;          // the uuid attribute's string
  std::optional<std::string_view> parent_uuid;   // a partition's parent GPU (the parent attribute's string)
  std::optional<std::string_view> pci_bus_id;    // resource.kubernetes.io/pciBusID: its physical GPU's
  std::vector<std::string_view> counter_sets;    // consumesCounters[].counterSet
  std::vector<DeviceTaint> taints;               // spec.devices[].taints
};

struct ResourceSliceView {
  std::string_view name;
  std::string_view node_name;  // spec.nodeName; empty for slices of no single node (network devices)
  std::string_view driver;
  std::string_view pool;  // spec.pool.name
  int64_t pool_generation = 0;   // spec.pool.generation: only a pool's newest slices count
  int64_t pool_slice_count = 1;  // spec.pool.resourceSliceCount: the pool is complete with this many
  std::vector<DraDeviceView> devices;
  std::string invalid_reason;  // a device fact that made no sense (left out), for the watch's log
};

}  // namespace gpu_extender
