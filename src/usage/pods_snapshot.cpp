
#include "common/file_text.h"
#include "gpu_extender/usage/usage_source.h"
#include "gpu_extender/wire/wire.h"

namespace gpu_extender {

std::unique_ptr<PodsSnapshotUsage> PodsSnapshotUsage::load(const std::string& path, const ViewSchema& schema) {
  return from_text(load_object_file(path), schema, path);  // kubectl get pods -A -o json, or -o yaml
}

std::unique_ptr<PodsSnapshotUsage> PodsSnapshotUsage::from_text(const std::string& text, const ViewSchema& schema,
                                                                std::string source_name) {
  auto usage = std::unique_ptr<PodsSnapshotUsage>(new PodsSnapshotUsage());
  usage->source_ = std::move(source_name);
  WireDecoder decoder;
  try {
    decoder.decode_list<PodRequest>(text, schema, [&](const PodRequest& pod) {
      if (pod.node_name.empty() || pod.terminated()) return;
      usage->by_node_[std::string(pod.node_name)].add(pod.requests);
      ++usage->pods_counted_;
    });
  } catch (const DecodeError& e) {
    throw std::runtime_error(usage->source_ + ": " + e.what());
  }
  return usage;
}

std::optional<ResourceAmounts> PodsSnapshotUsage::used_on(std::string_view node) const {
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return ResourceAmounts{};
  return it->second;
}

std::string PodsSnapshotUsage::describe() const {
  return "pods snapshot " + source_ + " (" + std::to_string(pods_counted_) + " pods on " +
         std::to_string(by_node_.size()) + " nodes)";
}

}  // namespace gpu_extender
