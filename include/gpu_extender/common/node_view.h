#pragma once
// The parts of a Kubernetes Node that the policy reads, and nothing else.
//
// Every string is a view into storage owned elsewhere: the request body and its parser (full mode), or
// the node cache's own buffers. A NodeView is valid only as long as that storage. Thread-safe to read.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "gpu_extender/common/device_taint.h"

#include "gpu_extender/common/resources.h"

namespace gpu_extender {

struct NodeView {
  std::string_view name;
  std::string_view resource_version;  // metadata.resourceVersion (watch bookkeeping)
  // The node object exactly as it arrived on the wire (full mode), echoed back by /filter.
  std::string_view raw_json;

  // Raw label and annotation texts, when present; parsed by the predicates that read them so that a
  // malformed label fails that node with a reason instead of failing the whole request.
  std::optional<std::string_view> gpu_model;        // label, e.g. "A100"
  std::optional<std::string_view> gpu_memory;       // label, MiB per GPU, e.g. "40960"
  std::optional<std::string_view> gpu_count;        // label, e.g. "8"
  std::optional<std::string_view> gpu_family;       // label, e.g. "ampere"
  std::optional<std::string_view> gpu_replicas;     // label, time-sliced pods per GPU, e.g. "4"
  std::optional<std::string_view> gpu_utilization;  // annotation, fraction 0..1
  // MIG mixed strategy, by profile (ViewSchema::mig_*): slices the node has, MiB of one slice.
  std::array<std::optional<std::string_view>, kMaxMigProfiles> mig_count, mig_memory;
  // Network topology, by level of ViewSchema::node_topology_labels (top first): the node's label value
  // there, when it carries one. A domain is the path of these values from the top (topology.h).
  std::array<std::optional<std::string_view>, kMaxTopologyLevels> topology;
  // Which of the schema's labels each fact above came from (an index into node_gpu_*_labels).
  uint8_t gpu_model_label = 0, gpu_memory_label = 0, gpu_count_label = 0, gpu_family_label = 0, gpu_replicas_label = 0;
  // The GPU facts (model, memory, count, family, and the GPU resource's capacity and allocatable) come
  // from the node's DRA ResourceSlices (state/dra_inventory.h), not its labels.
  bool gpus_from_dra = false;
  // DRA: per GPU that only its device taints keep from whole-GPU claims (counted as in use), those taints.
  // A pod whose claims tolerate them may still have it (filter gpuCount).
  std::span<const std::vector<DeviceTaint>> dra_tainted_gpus;

  ResourceAmounts capacity;
  ResourceAmounts allocatable;

  // What the node can hand out of resource i: allocatable when reported, else capacity, else none.
  std::optional<int64_t> offered(size_t i) const {
    if (allocatable.has(i)) return allocatable.get(i);
    if (capacity.has(i)) return capacity.get(i);
    return std::nullopt;
  }
};

}  // namespace gpu_extender
