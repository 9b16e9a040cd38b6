#pragma once
// A node's GPUs as the GPU predicates and scorers count them. One definition, used by all of them.
#include <optional>

#include "gpu_extender/policy.h"
#include "gpu_extender/quantity.h"

namespace gpu_extender::rules {

struct GpuInventory {
  std::optional<int64_t> total;  // GPUs the node offers (time-sliced: GPUs x replicas, as pods count them)
  std::optional<int64_t> used;   // GPUs in use, when usage is known
  int64_t replicas = 1;          // pods sharing each GPU (time-slicing); 1 when not shared
  std::optional<int64_t> free() const {
    if (!total || !used) return std::nullopt;
    return *total > *used ? *total - *used : 0;
  }
};

// Total: the node's allocatable (else capacity) of the GPU resource, as the kubelet's device plugin
// reports it; without one, the gpu count label. Used: from the usage source, when known. Replicas:
// the node's time-slicing label.
inline GpuInventory gpu_inventory(const NodeInput& input) {
  GpuInventory inv;
  if (auto offered = input.node->offered(ViewSchema::kGpuResource)) {
    inv.total = *offered / 1000;  // whole devices
  } else if (input.node->gpu_count) {
    QuantityParse q = parse_quantity(*input.node->gpu_count);
    if (q.milli && *q.milli >= 0) inv.total = *q.milli / 1000;
  }
  if (input.node->gpu_replicas) {
    // A label that is not a whole number of at least 1 is ignored: the GPUs count as not shared.
    QuantityParse q = parse_quantity(*input.node->gpu_replicas);
    if (q.milli && *q.milli >= 1000 && *q.milli % 1000 == 0) inv.replicas = *q.milli / 1000;
  }
  if (input.used) inv.used = milli_to_units_ceil(input.used->has(ViewSchema::kGpuResource)
                                                      ? input.used->get(ViewSchema::kGpuResource)
                                                      : 0);
  return inv;
}

}  // namespace gpu_extender::rules
