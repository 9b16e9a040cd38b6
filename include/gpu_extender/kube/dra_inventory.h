#pragma once
// A node's GPUs as a DRA driver publishes them (ResourceSlices, resource_slice_view.h), kept by the
// cluster view per slice, and what they make of the node's GPU facts: where a node has any, they take
// the place of its GPU labels and allocatable (CachedNode::with_dra_gpus), so every rule reads them.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpu_extender/common/resource_claim_view.h"
#include "gpu_extender/common/resource_slice_view.h"
#include "gpu_extender/common/view_schema.h"

namespace gpu_extender {

struct DraGpu {
  std::string name;          // the device's name in its pool: "gpu-0"
  std::string uuid;          // "GPU-5f1c..."; "" when not published
  std::string model;         // as the driver names it: "NVIDIA H100 80GB HBM3"
  std::string architecture;  // "Hopper"
  int64_t memory_bytes = -1;  // -1: not published
};

// A partition of a GPU (MIG): not a GPU of its own, but a claim holding it occupies its parent.
struct DraPartition {
  std::string name;         // "gpu-0-mig-1g10gb-0"
  std::string parent_uuid;  // the uuid of the GPU it is carved from
};

// One slice, as the view keeps it: its node and pool, its whole GPUs of the schema's driver, and their
// partitions (devices of other drivers are left out).
struct DraSlice {
  std::string name, node, pool;
  std::vector<DraGpu> gpus;
  std::vector<DraPartition> partitions;
  static DraSlice of(const ResourceSliceView& slice, const ViewSchema& schema);
};
using DraSlices = std::map<std::string, DraSlice, std::less<>>;  // a node's slices, by name

// The whole GPU a claim holding `device` of `pool` occupies, as "pool/gpu-3": the device itself, or for a
// partition the GPU its parent uuid names (in any of the node's slices of that pool). A device the
// slices do not show (not published yet, or another kind) is named as itself, so it still counts once.
std::string occupied_gpu(const DraSlices& slices, std::string_view pool, std::string_view device);

// What an allocated claim holds, as the view keeps it: its node and the devices of the schema's driver
// (pool and device name); the pods it is reserved for or owned by.
struct DraClaim {
  std::string key;  // "namespace/name"
  std::string node;
  struct Device {
    std::string pool, device;
  };
  std::vector<Device> devices;
  std::vector<std::string> pods;  // uids
  // GPUs its spec asks for: the counts of its requests of a GPU device class (ViewSchema::dra_gpu_classes).
  // A request of every matching device (All), of alternatives (firstAvailable) or of a share of a device's
  // capacity (KEP-5075: a device others share may serve it, which only the allocator can weigh) is not counted.
  int64_t requested_gpus = 0;
  // A claim, or a template (no allocation, no pods: its requests only).
  static DraClaim of(const ResourceClaimView& claim, const ViewSchema& schema);
};

// What a node's slices say of its GPUs, all slices together.
struct DraGpuSummary {
  int64_t count = 0;
  std::string model;                // the model most of them are, as GPU Feature Discovery writes it
  std::optional<int64_t> memory_mib;  // the smallest memory of them; none when one is not published
  std::string family;               // the architecture most of them are, lower case (GFD's family)
  static DraGpuSummary of(const DraSlices& slices);
};

// GPU Feature Discovery's form of a product name: characters outside [A-Za-z0-9-_. ] dropped, spaces
// to dashes ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3"), so that a pod's "H100" matches both.
std::string gfd_product_name(std::string_view name);

}  // namespace gpu_extender
