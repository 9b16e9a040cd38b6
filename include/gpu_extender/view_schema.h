#pragma once
// What the decoders extract from Kubernetes objects: which labels, annotations and resources.
//
// Built once from the policy configuration and read by every decoder; the wire layer depends on this
// schema, never on the policy itself. Thread-safe: immutable after construction.
#include <string>

#include "gpu_extender/resources.h"

namespace gpu_extender {

struct ViewSchema {
  static constexpr size_t kGpuResource = 0;
  static constexpr size_t kPackedResource = 1;
  static constexpr size_t kFirstExcludedResource = 2;

  ResourceTable resources;  // [gpu, packed, excluded...]

  std::string node_gpu_model_label = "gpu.nvidia.com/model";
  std::string node_gpu_memory_label = "gpu.nvidia.com/memory";
  std::string node_gpu_count_label = "gpu.nvidia.com/count";
  std::string node_gpu_utilization_annotation = "gpu.nvidia.com/utilization";
  std::string pod_gpu_model_annotation = "gpu.nvidia.com/model";
  std::string pod_gpu_memory_annotation = "gpu.nvidia.com/memory";
};

}  // namespace gpu_extender
