#include "gpu_extender/kube/node_source.h"

namespace gpu_extender {

std::shared_ptr<const CachedNode> CachedNode::copy_of(const NodeView& decoded) {
  auto node = std::shared_ptr<CachedNode>(new CachedNode());
  node->view_ = decoded;
  node->view_.raw_json = {};  // the cache does not keep node bytes: names mode never echoes them
  node->name_ = decoded.name;
  node->view_.name = node->name_;
  auto own = [](const std::optional<std::string_view>& from, std::string& storage,
                std::optional<std::string_view>& to) {
    if (!from) return;
    storage = *from;
    to = storage;
  };
  own(decoded.gpu_model, node->model_, node->view_.gpu_model);
  own(decoded.gpu_memory, node->memory_, node->view_.gpu_memory);
  own(decoded.gpu_count, node->count_, node->view_.gpu_count);
  own(decoded.gpu_family, node->family_, node->view_.gpu_family);
  own(decoded.gpu_replicas, node->replicas_, node->view_.gpu_replicas);
  own(decoded.gpu_utilization, node->utilization_, node->view_.gpu_utilization);
  for (size_t k = 0; k < kMaxMigProfiles; ++k) {
    own(decoded.mig_count[k], node->mig_count_[k], node->view_.mig_count[k]);
    own(decoded.mig_memory[k], node->mig_memory_[k], node->view_.mig_memory[k]);
  }
  for (size_t l = 0; l < kMaxTopologyLevels; ++l) own(decoded.topology[l], node->topology_[l], node->view_.topology[l]);
  return node;
}

}  // namespace gpu_extender
