#include "gpu_extender/state/node_source.h"

namespace gpu_extender {

std::shared_ptr<const CachedNode> CachedNode::copy_of(const NodeView& decoded) {
  auto node = std::shared_ptr<CachedNode>(new CachedNode());
  node->view_ = decoded;
  node->view_.raw_json = {};  // the cache does not keep node bytes: names mode never echoes them
  node->view_.dra_tainted_gpus = {};  // owned by the node it was read from; with_dra_gpus sets its own
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

std::shared_ptr<const CachedNode> CachedNode::with_dra_gpus(const NodeView& listed, const DraGpuSummary& gpus) {
  std::shared_ptr<const CachedNode> copy = copy_of(listed);
  auto node = std::const_pointer_cast<CachedNode>(copy);
  NodeView& v = node->view_;
  auto set = [](const std::string& value, std::string& storage, std::optional<std::string_view>& to) {
    storage = value;
    if (value.empty()) to.reset();
    else to = storage;
  };
  set(gpus.model, node->model_, v.gpu_model);
  set(gpus.memory_mib ? std::to_string(*gpus.memory_mib) : std::string(), node->memory_, v.gpu_memory);
  set(std::to_string(gpus.count), node->count_, v.gpu_count);
  set(gpus.family, node->family_, v.gpu_family);
  v.gpu_replicas.reset();  // DRA devices are whole GPUs (shared ones are other devices)
  v.gpu_model_label = v.gpu_memory_label = v.gpu_count_label = v.gpu_family_label = v.gpu_replicas_label = 0;
  v.capacity.set(ViewSchema::kGpuResource, gpus.count * 1000);
  v.allocatable.set(ViewSchema::kGpuResource, gpus.count * 1000);
  node->tainted_ = gpus.tainted;
  v.dra_tainted_gpus = node->tainted_;
  v.gpus_from_dra = true;
  return copy;
}

}  // namespace gpu_extender
