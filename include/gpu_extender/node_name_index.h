#pragma once
// The cluster view's node names in one flat, open-addressed table, for names mode: kube-scheduler
// sends every feasible node's name with every pod (5,000 at a time), in a new order each time, and
// std::unordered_map's bucket chains cost several cache misses per name. Here a name costs one hash
// of its bytes, one probe into a contiguous array (the stored hash settles almost every mismatch)
// and one comparison of the name itself.
//
// Rebuilt as a whole when the set of names changes: nodes come and go rarely, while usage changes
// (frequent) do not touch it. Not thread-safe by itself: the view guards it with its lock.
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace gpu_extender {

// 8 bytes at a time, multiply and fold (the shape of wyhash's short-input path). Node names are short
// DNS names; the table never trusts the hash alone.
inline uint64_t hash_node_name(std::string_view name) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  uint64_t h = name.size() * kMul;
  size_t i = 0;
  for (; i + 8 <= name.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, name.data() + i, 8);
    h = (h ^ word) * kMul;
    h ^= h >> 29;
  }
  if (i < name.size()) {
    uint64_t word = 0;
    std::memcpy(&word, name.data() + i, name.size() - i);
    h = (h ^ word) * kMul;
  }
  h ^= h >> 32;
  h *= kMul;
  return h ^ (h >> 29);
}

template <typename Entry>
class NodeNameIndex {
 public:
  // `entries`: pairs of (name, entry) whose names stay valid until the next rebuild.
  template <typename Range>
  void rebuild(const Range& entries) {
    size_t capacity = 16;
    while (capacity < 2 * entries.size()) capacity *= 2;  // at most half full: short probe runs
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (const auto& [name, entry] : entries) {
      const uint64_t hash = hash_node_name(name);
      size_t i = hash & mask_;
      while (slots_[i].entry) i = (i + 1) & mask_;
      slots_[i] = Slot{hash, std::string_view(name), &entry};
    }
  }

  Entry* find(std::string_view name) const {
    if (slots_.empty()) return nullptr;
    const uint64_t hash = hash_node_name(name);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (!slot.entry) return nullptr;
      if (slot.hash == hash && slot.name == name) return slot.entry;
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    std::string_view name;
    Entry* entry = nullptr;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace gpu_extender
