#pragma once
// Names mode's memo of the cluster view (ClusterView::SlotReader), kept by a request workspace.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/state/cluster_view.h"

namespace gpu_extender {

// What a request workspace keeps of the view from one names-mode request to the next, by node slot
// (a small number the view gives each node for as long as it knows it): the node object and its usage
// as of a version. Versions are unique over the view's life and change whenever a node's object or
// usage does, so an equal version means the same node in the same state, and whatever was derived
// from it (its verdict for a pod, see VerdictMemo) still holds. kube-scheduler sends the same nodes
// pod after pod, and between two pods only the nodes that were bound to have changed: the rest are
// neither copied nor judged again (as the scheduler's own NodeInfo generations spare it).
//
// The memo holds node objects the view may have replaced since, at most one per slot.
//
// The slots the view changed since the memo's last lookup (`synced_clock`) are brought up to date at
// once, read from the view's change log (or, for a new memo or one further behind than the log, every
// slot in slot order); a request's names then cost one byte each (`missing`). kube-scheduler sends its nodes in a new order every cycle (its parallel filter),
// and reading a version, a node and its usage per name in that order was a cache miss per read.
struct NodeMemo {
  static constexpr uint32_t kNoSlot = ClusterView::SlotReader::kNoSlot;
  std::vector<uint64_t> version;  // per slot; 0: never seen
  std::vector<std::shared_ptr<const CachedNode>> node;
  std::vector<ResourceAmounts> used;
  std::vector<uint8_t> missing;  // per slot: 1 when the view has no node object there
  uint64_t synced_clock = 0;     // every slot is as of this view version
  // The slots brought up to date since the owner last cleared this: what was derived from them (a
  // verdict, a score) no longer holds. The owner clears it after each lookup.
  std::vector<uint32_t> changed;
  std::vector<uint64_t> scratch_hashes;  // lookup's working space, kept for the next request

  // Name lists seen lately, as the JSON bytes of a NodeNames array, with the slots their names had
  // under the view's names generation of the time (slots move only when names come and go).
  // kube-scheduler sends /prioritize the very list its /filter answer named: that list is then found
  // by comparing bytes, not by looking 5,000 names up.
  struct RecentList {
    std::string json;
    std::vector<uint32_t> slots;
    uint64_t generation = 0;  // 0: empty
  };
  std::array<RecentList, 2> recent;
  size_t next_recent = 0;
  uint64_t generation = 0;  // of the last lookup
  // Keeps `json` (the names of `slots`, looked up by the last lookup) for the next requests. Only
  // what a request will be sent again is worth keeping: /filter's answer, not the list /filter was
  // sent (a new order every cycle); remembering that as well cost a copy and a comparison of the
  // whole list a pod (54 KB at 5,000 nodes).
  void remember(std::string_view json, std::span<const uint32_t> slots) {
    RecentList& r = recent[next_recent];
    next_recent = (next_recent + 1) % recent.size();
    r.json.assign(json);
    r.slots.assign(slots.begin(), slots.end());
    r.generation = generation;
  }

  // Names mode in one pass, under the view's one read lock: each name's slot (kNoSlot where the view
  // has no node object by that name), and this memo brought up to date. `names_json`: the names' bytes
  // as a JSON array, when known; a list remembered (remember()) is not looked up again.
  void lookup(const ClusterView& view, std::span<const std::string_view> names, std::vector<uint32_t>& slots,
              std::string_view names_json = {});
};

}  // namespace gpu_extender
