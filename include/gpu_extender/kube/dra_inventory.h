#pragma once
// A node's GPUs as a DRA driver publishes them (ResourceSlices, resource_slice_view.h), kept by the
// cluster view per slice, and what they make of the node's GPU facts: where a node has any, they take
// the place of its GPU labels and allocatable (CachedNode::with_dra_gpus), so every rule reads them.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpu_extender/common/resource_slice_view.h"
#include "gpu_extender/common/view_schema.h"

namespace gpu_extender {

struct DraGpu {
  std::string model;         // as the driver names it: "NVIDIA H100 80GB HBM3"
  std::string architecture;  // "Hopper"
  int64_t memory_bytes = -1;  // -1: not published
};

// One slice, as the view keeps it: its node and its whole GPUs of the schema's driver (MIG partitions,
// and devices of other drivers, are not counted).
struct DraSlice {
  std::string name, node;
  std::vector<DraGpu> gpus;
  static DraSlice of(const ResourceSliceView& slice, const ViewSchema& schema);
};

// What a node's slices say of its GPUs, all slices together.
struct DraGpuSummary {
  int64_t count = 0;
  std::string model;                // the model most of them are, as GPU Feature Discovery writes it
  std::optional<int64_t> memory_mib;  // the smallest memory of them; none when one is not published
  std::string family;               // the architecture most of them are, lower case (GFD's family)
  static DraGpuSummary of(const std::map<std::string, DraSlice, std::less<>>& slices);
};

// GPU Feature Discovery's form of a product name: characters outside [A-Za-z0-9-_. ] dropped, spaces
// to dashes ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3"), so that a pod's "H100" matches both.
std::string gfd_product_name(std::string_view name);

}  // namespace gpu_extender
