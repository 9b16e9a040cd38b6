// NodeMemo::lookup: see node_memo.h.
#include "server/service/node_memo.h"

#include <algorithm>

namespace gpu_extender {

void NodeMemo::lookup(const ClusterView& view, std::span<const std::string_view> names, std::vector<uint32_t>& slots,
                      std::string_view names_json) {
  view.read_slots([&](const ClusterView::SlotReader& reader) {
    const size_t size = reader.size();
    if (version.size() < size) {
      version.resize(size, 0);
      node.resize(size);
      used.resize(size);
      missing.resize(size, 1);
    }
    if (synced_clock != reader.clock()) {
      auto refresh = [&](size_t slot) {
        const uint64_t v = reader.version(slot);
        if (version[slot] == v) return;  // versions are unique: the same state (or a slot seen twice)
        version[slot] = v;
        node[slot] = reader.node(slot);
        used[slot] = reader.used(slot);
        // A free slot, or a deleted node whose pods are not gone yet: no node object.
        missing[slot] = node[slot] == nullptr ? 1 : 0;
        changed.push_back(static_cast<uint32_t>(slot));
      };
      // The slots changed since the last lookup, from the view's change log; when the memo is new or has
      // fallen further behind than the log reaches, every slot, in slot order.
      if (synced_clock == 0 || !reader.visit_changed_since(synced_clock, refresh))
        for (size_t slot = 0; slot < size; ++slot) refresh(slot);
      synced_clock = reader.clock();
    }
    generation = reader.names_generation();
    auto seen = std::find_if(recent.begin(), recent.end(), [&](const RecentList& r) {
      return !names_json.empty() && r.generation == generation && r.json == names_json;
    });
    if (seen != recent.end()) slots.assign(seen->slots.begin(), seen->slots.end());
    else reader.find(names, scratch_hashes, slots);
  });
  for (uint32_t& slot : slots)
    if (slot != kNoSlot && missing[slot] != 0) slot = kNoSlot;
}

}  // namespace gpu_extender
