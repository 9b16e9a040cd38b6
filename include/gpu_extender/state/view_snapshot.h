#pragma once
// What one request reads of the cluster view: per node slot (a small number the view gives each node
// for as long as it knows it), the node object and its usage, as of one view version (the snapshot's
// generation). Every verb takes its snapshot when it starts judging (after waiting for the binds before
// it) and reads nothing else of the view's nodes; what the ledger must decide atomically (a group's
// plan, a shared GPU's device at /bind) it decides under its own lock, through its own calls.
//
// kube-scheduler's cache is the model (Cache::UpdateSnapshot: a node is copied into the cycle's snapshot
// only when its NodeInfo generation moved). The scheduler keeps one snapshot for its one cycle at a time;
// the extender serves requests concurrently, so each request workspace keeps its own, and brings it up
// to date at the start of a request: versions are unique over the view's life and change whenever a
// node's object or usage does, so only the slots whose version moved are copied, read from the view's
// change log (or, for a new snapshot or one further behind than the log, every slot in slot order).
// Between two pods only the nodes bound to have changed: a request costs the changes, not the cluster.
//
// The snapshot holds node objects the view may have replaced since, at most one per slot: a request
// keeps reading the nodes it started with, whatever the watch does meanwhile.
//
// What was derived from a slot (names mode's verdicts and scores, server/service/names_mode.h) is kept
// by its owner while the slot's version holds: take_changes() says which slots moved since it last asked.
//
// Not thread-safe: one per workspace, used by one request at a time.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/state/cluster_view.h"

namespace gpu_extender {

class ViewSnapshot {
 public:
  static constexpr uint32_t kNoSlot = ClusterView::SlotReader::kNoSlot;
  // What a name is found as: a node to judge (a slot with a node object), or any slot the view keeps
  // usage for (also a deleted node whose pods are not gone yet: full mode counts their usage).
  enum class Find { kNodes, kEntries };

  // Brings the snapshot to the view's state now, under one read lock of the view.
  void update(const ClusterView& view);
  // update(), and each name's slot (kNoSlot where the view has none) under the same lock, so that the
  // slots and the state agree. `names_json`: the names' bytes as a JSON array, when known; a list
  // remembered (remember()) is not looked up again.
  void update_and_find(const ClusterView& view, std::span<const std::string_view> names, std::vector<uint32_t>& slots,
                       std::string_view names_json = {}, Find find = Find::kNodes);

  // The view version every slot is as of (0: never updated).
  uint64_t generation() const { return generation_; }
  // Changes whenever the view gives or takes back a slot: slots found under another names generation
  // may name other nodes now.
  uint64_t names_generation() const { return names_generation_; }
  size_t size() const { return version_.size(); }
  uint64_t version(uint32_t slot) const { return version_[slot]; }
  // The node object in `slot`: null for a free slot, or a deleted node whose pods are not gone yet.
  const std::shared_ptr<const CachedNode>& node(uint32_t slot) const { return node_[slot]; }
  const ResourceAmounts& used(uint32_t slot) const { return used_[slot]; }
  // The node in `slot` with its usage (the slot must hold a node object).
  NodeInput input(uint32_t slot) const { return {&node_[slot]->view(), &used_[slot]}; }

  // Calls mark(slot) for each slot brought up to date since the last call (for every slot, when more
  // changed than the snapshot has slots), then forgets them.
  template <typename Mark>
  void take_changes(Mark&& mark) {
    if (all_changed_) {
      for (uint32_t slot = 0; slot < version_.size(); ++slot) mark(slot);
    } else {
      for (const uint32_t slot : changed_) mark(slot);
    }
    changed_.clear();
    all_changed_ = false;
  }
  // The slots take_changes() would mark (for tests and the bench; empty once all changed).
  const std::vector<uint32_t>& changed() const { return changed_; }

  // Keeps `json` (the names of `slots`, as found by the last update_and_find) for the next requests. Only
  // what a request will be sent again is worth keeping: /filter's answer, which kube-scheduler sends
  // /prioritize as it is, not the list /filter was sent (a new order every cycle); remembering that as
  // well cost a copy and a comparison of the whole list a pod (54 KB at 5,000 nodes).
  void remember(std::string_view json, std::span<const uint32_t> slots);

 private:
  void refresh(const ClusterView::SlotReader& reader);  // under the view's read lock

  std::vector<uint64_t> version_;  // per slot; 0: never seen
  std::vector<std::shared_ptr<const CachedNode>> node_;
  std::vector<ResourceAmounts> used_;
  std::vector<uint8_t> missing_;  // per slot: 1 when the view has no node object there
  uint64_t generation_ = 0;
  uint64_t names_generation_ = 0;
  std::vector<uint32_t> changed_;
  bool all_changed_ = false;
  std::vector<uint64_t> scratch_hashes_;  // the names lookup's working space, kept for the next request

  // Name lists seen lately, as the JSON bytes of a NodeNames array, with the slots their names had
  // under the names generation of the time (slots move only when names come and go). kube-scheduler
  // sends /prioritize the very list its /filter answer named: that list is then found by comparing
  // bytes, not by looking 5,000 names up.
  struct RecentList {
    std::string json;
    std::vector<uint32_t> slots;
    uint64_t generation = 0;  // 0: empty
  };
  std::array<RecentList, 2> recent_;
  size_t next_recent_ = 0;
};

}  // namespace gpu_extender
