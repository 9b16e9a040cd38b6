#pragma once
// Test fleets for group planning and group preemption: EKS 8-GPU nodes in layer-3 blocks, and members.
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "../test_support.h"
#include "gpu_extender/policy/group_plan.h"

namespace group_fleet {
using namespace gpu_extender;

// Levels of the default policy used here: zone, EKS layer 1..3.
constexpr size_t kZone = 0, kLayer1 = 1, kLayer2 = 2, kLayer3 = 3;

// A fleet of EKS 8-GPU nodes in layer-3 blocks, with what is in use on each; strings owned here.
struct Fleet {
  std::deque<std::string> names, blocks;
  std::vector<NodeView> nodes;
  std::deque<ResourceAmounts> used;
  std::vector<NodeInput> inputs;

  // `per_block` nodes in each of `blocks` ("nn-a", ...); all under zone z1, layer-1 nn-1, layer-2 nn-2.
  void add_block(const std::string& block, int count, int gpus = 8) {
    blocks.push_back(block);
    for (int i = 0; i < count; ++i) {
      names.push_back(block + "-node-" + std::to_string(i));
      NodeView n = test_support::gpu_node(names.back(), "A100", "81920", gpus);
      n.topology[kZone] = "z1";
      n.topology[kLayer1] = "nn-1";
      n.topology[kLayer2] = "nn-2";
      n.topology[kLayer3] = blocks.back();
      nodes.push_back(n);
      used.emplace_back();
    }
  }
  void use(size_t node, int gpus) { used[node].set(ViewSchema::kGpuResource, gpus * 1000LL); }
  std::span<const NodeInput> candidates() {
    inputs.clear();
    for (size_t i = 0; i < nodes.size(); ++i) inputs.emplace_back(&nodes[i], &used[i]);
    return inputs;
  }
};

inline PodRequest member(int gpus, std::string_view size = "4") {
  PodRequest p = test_support::gpu_pod(gpus, "A100");
  p.group.name = "llama";
  p.group.size = size;
  p.group.size_key = "gpu.nvidia.com/group-size";
  return p;
}

}  // namespace group_fleet
