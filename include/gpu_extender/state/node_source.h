#pragma once
// Where names mode (nodeCacheCapable: true) finds node objects: the extender's own node cache.
#include <array>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/common/node_view.h"
#include "gpu_extender/state/dra_inventory.h"

namespace gpu_extender {

// A node as the cache keeps it: its own copies of the strings the view points to. Immutable once
// built, shared by pointer, so a request keeps the nodes it looked up even if the watch replaces them.
class CachedNode {
 public:
  // Copies what `decoded` points to (it may point into a parser's buffer).
  static std::shared_ptr<const CachedNode> copy_of(const NodeView& decoded);
  // `listed` with the GPU facts of its DRA ResourceSlices in place of its labels' and allocatable's.
  static std::shared_ptr<const CachedNode> with_dra_gpus(const NodeView& listed, const DraGpuSummary& gpus);
  const NodeView& view() const { return view_; }

  CachedNode(const CachedNode&) = delete;
  CachedNode& operator=(const CachedNode&) = delete;

 private:
  CachedNode() = default;
  std::string name_, model_, memory_, count_, family_, replicas_, utilization_;
  std::array<std::string, kMaxMigProfiles> mig_count_, mig_memory_;
  std::array<std::string, kMaxTopologyLevels> topology_;
  std::vector<std::vector<DeviceTaint>> tainted_;
  NodeView view_;
};

// Thread-safe: lookups may run concurrently with the watch updating the cache.
class NodeSource {
 public:
  virtual ~NodeSource() = default;
  // False until the first full list of nodes has been read.
  virtual bool ready() const = 0;
  // One entry per name, nullptr where the node is unknown; all looked up at one instant.
  virtual void find_nodes(std::span<const std::string_view> names,
                          std::vector<std::shared_ptr<const CachedNode>>& out) const = 0;
};

}  // namespace gpu_extender
