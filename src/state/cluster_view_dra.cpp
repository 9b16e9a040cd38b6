// The cluster view's DRA kinds (cluster_view.h): kept by its DRA store (dra_store.h), under the view's
// lock, and what each change did applied to the view's entries in the same step: a node's object made
// again when its GPUs changed, its usage when what claims hold there did, a pod's own GPU request no
// longer counted once a claim holding GPUs is reserved for it.
#include "gpu_extender/state/cluster_view.h"

#include <algorithm>

#include "dra_store.h"

namespace gpu_extender {

namespace {
void sort_unique(std::vector<std::string>& names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
}
}  // namespace

template <typename Kind>
void ClusterView::upsert(Write, typename Kind::Object object) {
  DraEffects effects;
  std::unique_lock lock(mutex_);
  dra_->upsert<Kind>(std::move(object), effects);
  apply_dra(effects);
}

template <typename Kind>
void ClusterView::erase(Write, std::string_view key) {
  DraEffects effects;
  std::unique_lock lock(mutex_);
  dra_->erase<Kind>(key, effects);
  apply_dra(effects);
}

template <typename Kind>
void ClusterView::replace(Write, std::vector<typename Kind::Listed> objects) {
  DraEffects effects;
  std::unique_lock lock(mutex_);
  dra_->replace<Kind>(std::move(objects), effects);
  apply_dra(effects);
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

ClusterView::NodeMap::iterator ClusterView::dra_entry(const std::string& name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end() && dra_->node(name) != nullptr) it = entry_for(name);  // a slice or claim before its node
  return it;
}

void ClusterView::apply_dra(DraEffects& e) {
  // A change may name a node more than once (a relist, a rule refreshing every node): each is applied once.
  sort_unique(e.gpus_changed);
  sort_unique(e.holds_changed);
  for (const std::string& name : e.gpus_changed) {
    auto it = dra_entry(name);
    if (it == nodes_.end()) continue;
    refresh_node(name, it->second);
    erase_if_unused(it);
  }
  for (const std::string& name : e.holds_changed) {
    auto it = dra_entry(name);
    if (it == nodes_.end()) continue;
    recount_dra(name, it->second);
    erase_if_unused(it);
  }
  for (const auto& [uid, covered] : e.covered) cover_pod(uid, covered);
  reindex_if_names_changed();
}

ResourceAmounts ClusterView::claimed_amounts(const NodeEntry& entry) {
  ResourceAmounts out;
  if (entry.dra_counted > 0) out.set(ViewSchema::kGpuResource, entry.dra_counted * 1000);
  return out;
}

void ClusterView::recount_dra(std::string_view name, NodeEntry& entry) {
  const int64_t counted = dra_->in_use_on(name);
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
