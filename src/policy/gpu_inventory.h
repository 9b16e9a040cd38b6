#pragma once
// A node's GPUs as the GPU predicates and scorers count them. One definition, used by all of them.
#include <optional>

#include "gpu_extender/policy/policy.h"
#include "gpu_extender/common/quantity.h"

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

// MIG mixed strategy: the slices of one profile (ViewSchema::mig_*), counted as whole GPUs are. Total:
// the node's allocatable (else capacity) of the profile's resource, else its <resource>.count label.
inline GpuInventory mig_inventory(const NodeInput& input, const ViewSchema& schema, size_t profile) {
  const size_t resource = schema.mig_resource(profile);
  GpuInventory inv;
  if (auto offered = input.node->offered(resource)) {
    inv.total = *offered / 1000;
  } else if (const auto& label = input.node->mig_count[profile]) {
    QuantityParse q = parse_quantity(*label);
    if (q.milli && *q.milli >= 0) inv.total = *q.milli / 1000;
  }
  if (input.used) inv.used = milli_to_units_ceil(input.used->has(resource) ? input.used->get(resource) : 0);
  return inv;
}

// Slices of MIG profile `profile` the pod requests, in whole slices (0: none).
inline int64_t mig_slices_wanted(const PodFacts& pod, const ViewSchema& schema, size_t profile) {
  return milli_to_units_ceil(pod.requested(schema.mig_resource(profile)));
}

// The first MIG profile the pod requests slices of, if any. A pod may ask for several: the filters
// judge each, the scorers rank by this one.
inline std::optional<size_t> first_mig_request(const PodFacts& pod, const ViewSchema& schema) {
  for (size_t k = 0; k < schema.mig_profiles(); ++k)
    if (mig_slices_wanted(pod, schema, k) > 0) return k;
  return std::nullopt;
}

// GPU scorers rank pods that want whole GPUs or MIG slices.
inline bool wants_gpus_or_slices(const PodFacts& pod, const ViewSchema& schema) {
  return pod.wants_gpus() || first_mig_request(pod, schema).has_value();
}

}  // namespace gpu_extender::rules
