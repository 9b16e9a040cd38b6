#include "gpu_extender/state/cluster_view.h"

#include "gpu_extender/policy/gpu_share.h"
#include "gpu_extender/common/quantity.h"
#include "dra_store.h"
#include "node_name_index.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace gpu_extender {
ClusterView::ClusterView() : dra_(std::make_unique<DraStore>()), index_(std::make_unique<NodeNameIndex>()) {}

ClusterView::~ClusterView() = default;

void ClusterView::touch(Write) {
  last_event_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

ClusterView::NodeMap::iterator ClusterView::entry_for(const std::string& name) {
  auto [it, added] = nodes_.try_emplace(name);
  if (added) {
    if (free_slots_.empty()) {
      it->second.slot = next_slot_++;
      slot_states_.resize(next_slot_);
    } else {
      it->second.slot = free_slots_.back();
      free_slots_.pop_back();
    }
    slot_states_[it->second.slot].entry = &it->second;
    ++names_generation_;
    changed(it->second);  // a new version: a memo of the slot's last owner does not apply
    if (!index_->insert(it->first, it->second.slot)) names_changed_ = true;
  }
  return it;
}

void ClusterView::erase_if_unused(NodeMap::iterator it) {
  // A churning cluster must not grow the map. An entry with no node object, nothing in use on it and
  // nothing of DRA's is a deleted node whose pods are gone too.
  const NodeEntry& entry = it->second;
  if (entry.listed || entry.used.milli != ResourceAmounts{}.milli || dra_->node(it->first) != nullptr) return;
  free_slots_.push_back(it->second.slot);
  slot_states_[it->second.slot].entry = nullptr;
  nodes_.erase(it);
  ++names_generation_;
  names_changed_ = true;  // the index still points at the erased entry: rebuilt before the lock is released
}

void ClusterView::reindex_if_names_changed() {
  if (!names_changed_) return;
  std::vector<std::pair<std::string_view, uint32_t>> names;
  names.reserve(nodes_.size());
  for (const auto& [name, entry] : nodes_) names.emplace_back(name, entry.slot);
  index_->rebuild(names);
  names_changed_ = false;
}

void ClusterView::add_usage(const std::string& node, const ResourceAmounts& amounts, bool add) {
  const auto it = entry_for(node);
  if (add) it->second.used.add(amounts);
  else it->second.used.subtract(amounts);
  changed(it->second);
  erase_if_unused(it);  // the last pod of a deleted node is gone
}

void ClusterView::refresh_node(NodeEntry& entry, const DraNodePart* dra) {
  // A node whose slices publish no GPU (a counter set only, for now) keeps its labels' facts.
  if (!entry.listed || dra == nullptr || dra->gpus.gpus.empty()) entry.node = entry.listed;
  else entry.node = CachedNode::with_dra_gpus(entry.listed->view(), dra->summary);
  recount_dra(entry, dra);
  changed(entry);
}

template <>
void ClusterView::upsert<stored::Nodes>(Write, NodeView node) {
  auto cached = CachedNode::copy_of(node);
  std::unique_lock lock(mutex_);
  NodeEntry& entry = entry_for(std::string(node.name))->second;
  if (!entry.listed) ++node_objects_;
  entry.listed = std::move(cached);
  refresh_node(entry, dra_->node(node.name));
  reindex_if_names_changed();
}

template <>
void ClusterView::erase<stored::Nodes>(Write, std::string_view name) {
  std::unique_lock lock(mutex_);
  auto it = nodes_.find(name);
  if (it == nodes_.end() || !it->second.listed) return;
  it->second.listed.reset();
  refresh_node(it->second, dra_->node(name));
  --node_objects_;
  erase_if_unused(it);  // pods still bound there keep the entry until their deletion follows
  reindex_if_names_changed();
}

void ClusterView::add_pod(const std::string& uid, PodEntry entry) {
  entry.covered = dra_->covers(uid);
  add_usage(entry.node, counted(entry), true);
  if (!entry.group.empty()) groups_[entry.group][uid] = entry.node;
  pods_.insert_or_assign(uid, std::move(entry));
}

void ClusterView::erase_pod(std::string_view uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  add_usage(it->second.node, counted(it->second), false);
  if (!it->second.group.empty()) {
    if (auto g = groups_.find(it->second.group); g != groups_.end()) {
      g->second.erase(it->first);
      if (g->second.empty()) groups_.erase(g);
    }
  }
  pods_.erase(it);
}

void ClusterView::release_in_flight(const InFlightRelease& released) {
  for (const auto& [node, amounts] : released) {
    entry_for(node)->second.in_flight.subtract(amounts);
    add_usage(node, amounts, false);
  }
}

void ClusterView::upsert_pod(Write, const PodRequest& pod, const InFlightRelease& released) {
  if (pod.uid.empty()) return;
  std::unique_lock lock(mutex_);
  release_in_flight(released);
  erase_pod(pod.uid);
  if (!pod.node_name.empty() && !pod.terminated())
    add_pod(std::string(pod.uid),
            PodEntry{std::string(pod.node_name), pod.requests, cost_details_of(pod), PendingPod::member_of(pod),
                     victim_details_of(pod, pod.requests), false});
  reindex_if_names_changed();
}

void ClusterView::delete_pod(Write, std::string_view uid, const InFlightRelease& released) {
  std::unique_lock lock(mutex_);
  release_in_flight(released);
  erase_pod(uid);
  reindex_if_names_changed();
}

template <>
void ClusterView::replace<stored::Nodes>(Write, std::vector<std::shared_ptr<const CachedNode>> nodes) {
  std::unique_lock lock(mutex_);
  for (auto& [name, entry] : nodes_) {
    entry.listed.reset();
    refresh_node(entry, dra_->node(name));
  }
  for (auto& node : nodes) {
    const std::string name(node->view().name);
    NodeEntry& entry = entry_for(name)->second;
    entry.listed = std::move(node);
    refresh_node(entry, dra_->node(name));
  }
  for (auto it = nodes_.begin(); it != nodes_.end();) erase_if_unused(it++);
  node_objects_ = nodes.size();
  reindex_if_names_changed();
  nodes_synced_ = true;  // a whole list is what the view waits for before it judges (ready())
}

void ClusterView::replace_pods(Write, const std::vector<BoundPod>& pods, const InFlightRelease& released) {
  std::unique_lock lock(mutex_);
  release_in_flight(released);  // what the list now shows, as the ledger releases it (observe_relist)
  pods_.clear();
  groups_.clear();
  // What is still in flight stays counted.
  for (auto& [name, entry] : nodes_) {
    entry.used = entry.in_flight;
    entry.used.add(claimed_amounts(entry));
    changed(entry);
  }
  for (const BoundPod& pod : pods) add_pod(pod.uid, PodEntry{pod.node, pod.requests, pod.costed, pod.group, pod.victim, false});
  for (auto it = nodes_.begin(); it != nodes_.end();) erase_if_unused(it++);  // nodes gone whose pods are too
  reindex_if_names_changed();
}

void ClusterView::mark_nodes_synced(Write) { nodes_synced_ = true; }
void ClusterView::mark_pods_synced(Write) { pods_synced_ = true; }

void ClusterView::count_in_flight(Write, const std::string& node, const ResourceAmounts& amounts, bool add) {
  std::unique_lock lock(mutex_);
  const auto it = entry_for(node);
  if (add) it->second.in_flight.add(amounts);
  else it->second.in_flight.subtract(amounts);
  add_usage(node, amounts, add);
  reindex_if_names_changed();
}

std::vector<NodeInput> ClusterView::PreemptionSnapshot::inputs() const {
  std::vector<NodeInput> out;
  for (size_t i = 0; i < nodes.size(); ++i) out.emplace_back(&nodes[i]->view(), &used[i]);
  return out;
}

ClusterView::PreemptionSnapshot ClusterView::preemption_snapshot() const {
  PreemptionSnapshot s;
  std::shared_lock lock(mutex_);
  for (const auto& [name, entry] : nodes_) {
    if (!entry.node) continue;
    s.nodes.push_back(entry.node);
    s.used.push_back(entry.used);
  }
  for (const auto& [uid, pod] : pods_)
    if (pod.victim) s.pods.push_back(*pod.victim);
  return s;
}

bool ClusterView::has_pod(std::string_view uid) const {
  std::shared_lock lock(mutex_);
  return pods_.find(uid) != pods_.end();
}

std::vector<std::pair<std::string, std::string>> ClusterView::group_members(std::string_view group) const {
  std::vector<std::pair<std::string, std::string>> out;
  std::shared_lock lock(mutex_);
  if (auto g = groups_.find(group); g != groups_.end())
    for (const auto& [uid, node] : g->second) out.emplace_back(uid, node);
  return out;
}

std::optional<ResourceAmounts> ClusterView::used_on(std::string_view node) const {
  std::shared_lock lock(mutex_);
  auto it = nodes_.find(node);
  return it == nodes_.end() ? ResourceAmounts{} : it->second.used;
}

std::string ClusterView::describe() const {
  const Stats s = stats();
  return "Kubernetes API watch (" + std::to_string(s.nodes) + " nodes, " + std::to_string(s.pods) +
         " pods holding resources" + (ready() ? "" : ", not synced yet") + ")";
}

void ClusterView::find_nodes(std::span<const std::string_view> names,
                             std::vector<std::shared_ptr<const CachedNode>>& out) const {
  out.clear();
  out.reserve(names.size());
  std::shared_lock lock(mutex_);
  for (std::string_view name : names) {
    auto it = nodes_.find(name);
    out.push_back(it == nodes_.end() ? nullptr : it->second.node);
  }
}

void ClusterView::read_slots(const std::function<void(const SlotReader&)>& read) const {
  std::shared_lock lock(mutex_);
  read(SlotReader(*this));
}

void ClusterView::SlotReader::find(std::span<const std::string_view> names, std::vector<uint64_t>& hashes,
                                   std::vector<uint32_t>& slots) const {
  static_assert(kNoSlot == NodeNameIndex::kNone);
  view_.index_->find_many(names, hashes, slots);
}

std::optional<std::pair<std::string, ResourceAmounts>> ClusterView::pod_usage(std::string_view uid) const {
  std::shared_lock lock(mutex_);
  if (auto it = pods_.find(uid); it != pods_.end()) return std::make_pair(it->second.node, it->second.requests);
  return std::nullopt;
}

void ClusterView::visit_costed_pods(
    const std::function<void(const CostedPod&, const NodeView&, const ResourceAmounts&)>& visit) const {
  std::shared_lock lock(mutex_);
  for (const auto& [uid, pod] : pods_) {
    if (!pod.costed) continue;
    auto node = nodes_.find(pod.node);
    if (node == nodes_.end() || !node->second.node) continue;
    visit(*pod.costed, node->second.node->view(), node->second.used);
  }
}

void ClusterView::visit_gpu_models(const std::function<void(size_t label, std::string_view model)>& visit) const {
  std::shared_lock lock(mutex_);
  for (const auto& [name, entry] : nodes_) {
    if (!entry.listed) continue;  // DRA facts replace labels in `node`; the labels are the object's
    const NodeView& view = entry.listed->view();
    if (view.gpu_model) visit(view.gpu_model_label, *view.gpu_model);
  }
}

ClusterView::SharedGpuStats ClusterView::shared_gpu_stats(int64_t smallest_pending) const {
  SharedGpuStats out;
  out.smallest_pending = smallest_pending;
  std::shared_lock lock(mutex_);
  for (const auto& [name, entry] : nodes_) {
    if (!entry.node) continue;
    const std::optional<SharedGpus> gpus = shared_gpus(NodeInput(&entry.node->view(), &entry.used));
    if (!gpus) continue;
    out.devices += gpus->devices;
    for (int64_t d = 0; d < gpus->devices; ++d) {
      const int64_t free = std::max<int64_t>(gpus->free[static_cast<size_t>(d)], 0);
      out.free += free;
      if (free > 0 && free < out.smallest_pending) out.fragmented += free;
    }
  }
  return out;
}

ClusterView::Stats ClusterView::stats() const {
  Stats s;
  {
    std::shared_lock lock(mutex_);
    s.nodes = node_objects_;
    s.pods = pods_.size();
    s.node_entries = nodes_.size();
  }
  const int64_t last = last_event_ns_;
  if (last != 0) {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    s.seconds_since_event = static_cast<double>(now - last) / 1e9;
  }
  return s;
}

bool ClusterView::catch_up(uint64_t seen, Clock::time_point deadline, bool expecting) const {
  if (change_count() != seen) return true;
  if (!watch_hurry_) return false;  // no watch: nothing can come
  if (!watch_hurry_() && !expecting) return false;
  change_waiters_.fetch_add(1);
  std::unique_lock lock(change_mutex_);
  const bool moved = change_cv_.wait_until(lock, deadline, [&] { return change_count() != seen; });
  change_waiters_.fetch_sub(1);
  return moved;
}

void ClusterView::wake_change_waiters() const {
  // Taken and released so that a waiter between its check and its wait is in the wait when notified.
  { std::lock_guard lock(change_mutex_); }
  change_cv_.notify_all();
}

}  // namespace gpu_extender
