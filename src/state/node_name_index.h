#pragma once
// The cluster view's node names in one flat, open-addressed table, for names mode: kube-scheduler
// sends every feasible node's name with every pod (5,000 at a time), in a new order each time, and
// std::unordered_map's bucket chains cost several cache misses per name. Here a name costs one hash
// of its bytes, one probe into 8-byte buckets (a stored hash tag settles almost every mismatch) and
// one comparison with the name kept in a contiguous arena: all of it small enough to stay in cache.
//
// Names are added one at a time (the table grows by rebuilding, at half full) and removed by a
// rebuild: nodes are deleted rarely, and usage changes (frequent) do not touch the table. Not
// thread-safe by itself: the view guards it with its lock.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <span>
#include <string_view>
#include <vector>

namespace gpu_extender {

namespace node_name_index_detail {
inline uint64_t load8(const char* p) {
  uint64_t word = 0;
  std::memcpy(&word, p, 8);  // a fixed size: one unaligned load
  return word;
}
}  // namespace node_name_index_detail

// 16 bytes at a time in two independent lanes (multiply and fold, the shape of wyhash's short-input
// path), so that a 40-byte name costs three rounds of latency rather than six; the last, partial
// block is read as the string's last 16 bytes (overlapping), never past its end. Node names are short
// DNS names; the table never trusts the hash alone.
inline uint64_t hash_node_name(std::string_view name) {
  using node_name_index_detail::load8;
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL, kMul2 = 0xC2B2AE3D27D4EB4FULL;
  const size_t n = name.size();
  uint64_t a = n * kMul, b = n ^ kMul2;
  auto round = [&](uint64_t x, uint64_t y) {
    a = (a ^ x) * kMul;
    b = (b ^ y) * kMul2;
    a ^= a >> 29;
    b ^= b >> 31;
  };
  if (n >= 16) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) round(load8(name.data() + i), load8(name.data() + i + 8));
    if (i < n) round(load8(name.data() + n - 16), load8(name.data() + n - 8));
  } else if (n >= 8) {
    round(load8(name.data()), load8(name.data() + n - 8));
  } else {
    uint64_t word = 0;
    for (size_t i = 0; i < n; ++i) word |= uint64_t{static_cast<unsigned char>(name[i])} << (8 * i);
    round(word, 0);
  }
  uint64_t h = a ^ (b * kMul);
  h ^= h >> 32;
  h *= kMul;
  return h ^ (h >> 29);
}

// Equality of two names, inline: 8 bytes at a time, the last word overlapping (no call to memcmp).
inline bool same_node_name(std::string_view a, std::string_view b) {
  using node_name_index_detail::load8;
  const size_t n = a.size();
  if (n != b.size()) return false;
  if (n < 8) return a == b;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    if (load8(a.data() + i) != load8(b.data() + i)) return false;
  return i == n || load8(a.data() + n - 8) == load8(b.data() + n - 8);
}

// Maps node names to slots (small integers the owner gives its nodes, dense from 0).
class NodeNameIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // `names`: pairs of (name, slot).
  template <typename Range>
  void rebuild(const Range& names) {
    size_t count = 0;
    for ([[maybe_unused]] const auto& entry : names) ++count;
    size_t capacity = 16;
    while (capacity < 2 * count) capacity *= 2;  // at most half full: short probe runs
    buckets_.assign(capacity, Bucket{});
    mask_ = capacity - 1;
    size_ = 0;
    arena_.clear();
    name_at_.clear();
    for (const auto& [name, slot] : names) place(name, slot);
  }

  // Adds a name not in the table yet; false (and nothing done) when the table is too full for it:
  // the caller rebuilds it.
  bool insert(std::string_view name, uint32_t slot) {
    if (2 * (size_ + 1) > buckets_.size()) return false;
    place(name, slot);
    return true;
  }

  uint32_t find(std::string_view name) const {
    if (buckets_.empty()) return kNone;
    const uint64_t hash = hash_node_name(name);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Bucket& bucket = buckets_[i];
      if (bucket.slot_plus_one == 0) return kNone;
      if (bucket.tag == tag_of(hash) && same_node_name(name_of(bucket.slot_plus_one - 1), name))
        return bucket.slot_plus_one - 1;
    }
  }

  // Every name's slot (kNone when absent) in out[i]. In blocks of names, three passes over each, so
  // that the cache misses of a block's look-ups overlap instead of following one another (hash and
  // fetch each name's bucket; probe and fetch the candidate's stored name; compare), while what the
  // passes fetched is still in the first-level cache for the next pass.
  void find_many(std::span<const std::string_view> names, std::vector<uint64_t>& scratch,
                 std::vector<uint32_t>& out) const {
    out.assign(names.size(), kNone);
    if (buckets_.empty()) return;
    scratch.resize(names.size());
    constexpr size_t kBlock = 32;
    for (size_t from = 0; from < names.size(); from += kBlock) {
      const size_t to = std::min(names.size(), from + kBlock);
      for (size_t i = from; i < to; ++i) {
        scratch[i] = hash_node_name(names[i]);
        __builtin_prefetch(&buckets_[scratch[i] & mask_]);
      }
      for (size_t i = from; i < to; ++i) {
        const uint32_t tag = tag_of(scratch[i]);
        for (size_t k = scratch[i] & mask_;; k = (k + 1) & mask_) {
          const Bucket& bucket = buckets_[k];
          if (bucket.slot_plus_one == 0) break;
          if (bucket.tag != tag) continue;
          out[i] = bucket.slot_plus_one - 1;  // a candidate: the name decides below
          const NameAt at = name_at_[out[i]];
          __builtin_prefetch(arena_.data() + at.offset);
          __builtin_prefetch(arena_.data() + at.offset + at.size - 1);  // names may straddle two lines
          break;
        }
      }
      for (size_t i = from; i < to; ++i)
        if (out[i] != kNone && !same_node_name(name_of(out[i]), names[i])) out[i] = find(names[i]);  // same tag, other name
    }
  }

 private:
  struct Bucket {
    uint32_t tag = 0;            // the hash's high half: settles almost every mismatch in the bucket
    uint32_t slot_plus_one = 0;  // 0: empty
  };
  struct NameAt {
    uint32_t offset = 0, size = 0;
  };
  static uint32_t tag_of(uint64_t hash) { return static_cast<uint32_t>(hash >> 32); }
  std::string_view name_of(uint32_t slot) const {
    return std::string_view(arena_).substr(name_at_[slot].offset, name_at_[slot].size);
  }
  void place(std::string_view name, uint32_t slot) {
    const uint64_t hash = hash_node_name(name);
    size_t i = hash & mask_;
    while (buckets_[i].slot_plus_one != 0) i = (i + 1) & mask_;
    buckets_[i] = Bucket{tag_of(hash), slot + 1};
    if (name_at_.size() <= slot) name_at_.resize(slot + 1);
    name_at_[slot] = NameAt{static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(name.size())};
    arena_ += name;
    ++size_;
  }
  std::vector<Bucket> buckets_;
  size_t mask_ = 0;
  size_t size_ = 0;
  std::string arena_;            // every name, one after another: 5,000 names in ~150 KB
  std::vector<NameAt> name_at_;  // per slot
};

}  // namespace gpu_extender
