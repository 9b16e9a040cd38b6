// ViewSnapshot: see view_snapshot.h.
#include "gpu_extender/state/view_snapshot.h"

#include <algorithm>

namespace gpu_extender {

void ViewSnapshot::refresh(const ClusterView::SlotReader& reader) {
  const size_t size = reader.size();
  if (version_.size() < size) {
    version_.resize(size, 0);
    node_.resize(size);
    used_.resize(size);
    missing_.resize(size, 1);
  }
  if (generation_ != reader.clock()) {
    auto copy = [&](size_t slot) {
      const uint64_t v = reader.version(slot);
      if (version_[slot] == v) return;  // versions are unique: the same state (or a slot seen twice)
      version_[slot] = v;
      node_[slot] = reader.node(slot);
      used_[slot] = reader.used(slot);
      missing_[slot] = node_[slot] == nullptr ? 1 : 0;
      if (all_changed_) return;
      // More changes than slots: whoever derives from slots re-derives them all, at the same cost.
      if (changed_.size() >= version_.size()) {
        all_changed_ = true;
        changed_.clear();
        return;
      }
      changed_.push_back(static_cast<uint32_t>(slot));
    };
    if (generation_ == 0 || !reader.visit_changed_since(generation_, copy))
      for (size_t slot = 0; slot < size; ++slot) copy(slot);
    generation_ = reader.clock();
  }
  names_generation_ = reader.names_generation();
}

void ViewSnapshot::update(const ClusterView& view) {
  view.read_slots([&](const ClusterView::SlotReader& reader) { refresh(reader); });
}

void ViewSnapshot::update_and_find(const ClusterView& view, std::span<const std::string_view> names,
                                   std::vector<uint32_t>& slots, std::string_view names_json, Find find) {
  view.read_slots([&](const ClusterView::SlotReader& reader) {
    refresh(reader);
    auto seen = std::find_if(recent_.begin(), recent_.end(), [&](const RecentList& r) {
      return !names_json.empty() && r.generation == names_generation_ && r.json == names_json;
    });
    if (seen != recent_.end()) slots.assign(seen->slots.begin(), seen->slots.end());
    else reader.find(names, scratch_hashes_, slots);
  });
  if (find == Find::kEntries) return;
  for (uint32_t& slot : slots)
    if (slot != kNoSlot && missing_[slot] != 0) slot = kNoSlot;
}

void ViewSnapshot::remember(std::string_view json, std::span<const uint32_t> slots) {
  RecentList& r = recent_[next_recent_];
  next_recent_ = (next_recent_ + 1) % recent_.size();
  r.json.assign(json);
  r.slots.assign(slots.begin(), slots.end());
  r.generation = names_generation_;
}

}  // namespace gpu_extender
