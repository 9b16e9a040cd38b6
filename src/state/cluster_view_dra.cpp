// The cluster view's DRA kinds (cluster_view.h): kept by its DRA store (dra_store.h), under the view's
// lock, and what each change did applied to the view's entries in the same step: a node's object made
// again when its GPUs changed, its usage when what claims hold there did, a pod's own GPU request no
// longer counted once a claim holding GPUs is reserved for it.
#include "gpu_extender/state/cluster_view.h"

#include "dra_store.h"

namespace gpu_extender {

class ClusterView::DraApplier final : public DraChanges {
 public:
  explicit DraApplier(ClusterView& view) : view_(view) {}
  void gpus_changed(const std::string& node, const DraNodePart* part) override {
    auto it = view_.dra_entry(node, part);
    if (it == view_.nodes_.end()) return;
    view_.refresh_node(it->second, part);
    view_.erase_if_unused(it);
  }
  void holds_changed(const std::string& node, const DraNodePart* part) override {
    auto it = view_.dra_entry(node, part);
    if (it == view_.nodes_.end()) return;
    view_.recount_dra(it->second, part);
    view_.erase_if_unused(it);
  }
  void covered(const std::string& uid, bool covered) override { view_.cover_pod(uid, covered); }

 private:
  ClusterView& view_;
};

template <typename Kind>
void ClusterView::upsert(Write, typename Kind::Object object) {
  std::unique_lock lock(mutex_);
  DraApplier applier(*this);
  dra_->upsert<Kind>(std::move(object), applier);
  reindex_if_names_changed();
}

template <typename Kind>
void ClusterView::erase(Write, std::string_view key) {
  std::unique_lock lock(mutex_);
  DraApplier applier(*this);
  dra_->erase<Kind>(key, applier);
  reindex_if_names_changed();
}

template <typename Kind>
void ClusterView::replace(Write, std::vector<typename Kind::Listed> objects) {
  std::unique_lock lock(mutex_);
  DraApplier applier(*this);
  dra_->replace<Kind>(std::move(objects), applier);
  reindex_if_names_changed();
}

// NOLINTBEGIN(bugprone-macro-parentheses): a type in a template argument cannot be parenthesized
#define GPU_EXTENDER_DRA_KIND(Kind)                                                          \
  template void ClusterView::upsert<stored::Kind>(Write, stored::Kind::Object);              \
  template void ClusterView::erase<stored::Kind>(Write, std::string_view);                   \
  template void ClusterView::replace<stored::Kind>(Write, std::vector<stored::Kind::Listed>);
GPU_EXTENDER_DRA_KIND(ResourceSlices)
GPU_EXTENDER_DRA_KIND(DeviceTaintRules)
GPU_EXTENDER_DRA_KIND(ResourceClaims)
GPU_EXTENDER_DRA_KIND(ResourceClaimTemplates)
#undef GPU_EXTENDER_DRA_KIND
// NOLINTEND(bugprone-macro-parentheses)

ClusterView::NodeMap::iterator ClusterView::dra_entry(const std::string& name, const DraNodePart* dra) {
  auto it = nodes_.find(name);
  if (it == nodes_.end() && dra != nullptr) it = entry_for(name);  // a slice or claim before its node
  return it;
}

ResourceAmounts ClusterView::claimed_amounts(const NodeEntry& entry) {
  ResourceAmounts out;
  if (entry.dra_counted > 0) out.set(ViewSchema::kGpuResource, entry.dra_counted * 1000);
  return out;
}

void ClusterView::recount_dra(NodeEntry& entry, const DraNodePart* dra) {
  const int64_t counted = dra != nullptr ? dra->in_use : 0;
  if (counted == entry.dra_counted) return;
  entry.used.subtract(claimed_amounts(entry));
  entry.dra_counted = counted;
  entry.used.add(claimed_amounts(entry));
  changed(entry);
}

ResourceAmounts ClusterView::counted(const PodEntry& pod) {
  if (!pod.covered || !pod.requests.has(ViewSchema::kGpuResource)) return pod.requests;
  ResourceAmounts out = pod.requests;
  out.set(ViewSchema::kGpuResource, 0);  // its claim's devices are counted instead
  return out;
}

void ClusterView::cover_pod(const std::string& uid, bool covered) {
  auto pod = pods_.find(uid);
  if (pod == pods_.end() || pod->second.covered == covered) return;
  add_usage(pod->second.node, counted(pod->second), false);
  pod->second.covered = covered;
  add_usage(pod->second.node, counted(pod->second), true);
}

int64_t ClusterView::claimed_gpus_of(const PodRequest& pod, std::vector<DeviceToleration>* tolerations) const {
  std::shared_lock lock(mutex_);
  return dra_->claimed_gpus_of(pod, tolerations);
}

DraStats ClusterView::dra_stats() const {
  std::shared_lock lock(mutex_);
  return dra_->stats();
}

std::optional<DraNodeReport> ClusterView::dra_node(std::string_view node) const {
  std::shared_lock lock(mutex_);
  return dra_->report(node);
}

}  // namespace gpu_extender
