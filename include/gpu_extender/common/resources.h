#pragma once
// Resource amounts keyed by a small, fixed table of resource names.
//
// The policy reads only a handful of resources (the GPU resource, the packed resource, the excluded
// ones), so amounts are a fixed array indexed by position in the table instead of a map: no heap
// allocation per node or per pod on the request path. Thread-safe: value types.
#include <array>
#include <cstddef>
#include <cstdint>
#include <climits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu_extender {

// Named resources (see ViewSchema): the GPU, packed and two GPU-sharing resources, cpu and memory, up to
// 6 excluded ones and up to 6 MIG profiles.
inline constexpr size_t kMaxExcludedResources = 6;
inline constexpr size_t kMaxMigProfiles = 6;
inline constexpr size_t kMaxNamedResources = 6 + kMaxExcludedResources + kMaxMigProfiles;
// GPU sharing by memory (gpushare): what the pods on a node hold of each of its devices is counted in
// slots after the named ones, one per device, so usage, assumed pods and snapshots carry it as they
// carry any amount. Devices past the last slot are not used for sharing.
inline constexpr size_t kMaxSharedGpuDevices = 8;
inline constexpr size_t kMaxTrackedResources = kMaxNamedResources + kMaxSharedGpuDevices;
constexpr size_t shared_gpu_device_slot(size_t device) { return kMaxNamedResources + device; }
// Network topology: the levels a policy lists (ViewSchema::node_topology_labels), top to bottom.
inline constexpr size_t kMaxTopologyLevels = 16;

// Names of the resources a policy tracks. Position 0 is the GPU resource, 1 the packed resource, 2 and
// 3 the shared GPU memory and count, 4 and 5 cpu and memory, then the excluded resources, then the MIG
// profiles (ViewSchema).
class ResourceTable {
 public:
  ResourceTable() = default;
  explicit ResourceTable(std::vector<std::string> names) : names_(std::move(names)) {}

  size_t size() const { return names_.size(); }
  const std::string& name(size_t index) const { return names_[index]; }
  // Index of `name`, or -1 when it is not tracked. Resource names are case-sensitive in Kubernetes.
  // An alias is another name of a tracked resource: amounts under both add up.
  struct Found {
    int index = -1;
    bool alias = false;
  };
  Found find(std::string_view name) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return {static_cast<int>(i), false};
    for (const auto& [alias, index] : aliases_)
      if (alias == name) return {static_cast<int>(index), true};
    return {};
  }
  int index_of(std::string_view name) const { return find(name).index; }
  // DRA's implicit extended resources (deviceclass.resource.kubernetes.io/<class>, KEP-5004) are the GPU
  // resource under another name (ViewSchema::set_dra_gpu_classes). Replaces the aliases of `index`.
  void set_aliases(size_t index, const std::vector<std::string>& names) {
    std::erase_if(aliases_, [&](const auto& a) { return a.second == index; });
    for (const std::string& name : names)
      if (index_of(name) < 0) aliases_.emplace_back(name, index);
  }
  bool operator==(const ResourceTable&) const = default;

 private:
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, size_t>> aliases_;
};

// Amounts in milli-units (see quantity.h) per tracked resource, and which of them were given.
struct ResourceAmounts {
  std::array<int64_t, kMaxTrackedResources> milli{};
  uint32_t present = 0;  // bit i set: resource i was listed
  bool operator==(const ResourceAmounts&) const = default;

  bool has(size_t i) const { return (present >> i) & 1U; }
  int64_t get(size_t i) const { return milli[i]; }
  void set(size_t i, int64_t value) {
    milli[i] = value;
    present |= 1U << i;
  }
  // Sums saturate at the int64 limits instead of wrapping: containers asking for 9.2e15 GPUs each
  // must add up to "too many", never to 1.
  void add(size_t i, int64_t value) { set(i, saturating_add(milli[i], value)); }
  void add(const ResourceAmounts& other) {
    for (size_t i = 0; i < kMaxTrackedResources; ++i)
      if (other.has(i)) add(i, other.milli[i]);
  }
  void subtract(const ResourceAmounts& other) {
    for (size_t i = 0; i < kMaxTrackedResources; ++i)
      if (other.has(i)) set(i, saturating_add(milli[i], other.milli[i] == INT64_MIN ? INT64_MAX : -other.milli[i]));
  }
  static int64_t saturating_add(int64_t a, int64_t b) {
    int64_t sum = 0;
    if (!__builtin_add_overflow(a, b, &sum)) return sum;
    return b > 0 ? INT64_MAX : INT64_MIN;
  }
  // Per resource, the larger of the two (Kubernetes' max of init-container and app requests).
  void max_with(const ResourceAmounts& other) {
    for (size_t i = 0; i < kMaxTrackedResources; ++i)
      if (other.has(i) && (!has(i) || other.milli[i] > milli[i])) set(i, other.milli[i]);
  }
};

// The usage of a node known to hold nothing, for a NodeInput to point to.
inline constexpr ResourceAmounts kNothingInUse{};

}  // namespace gpu_extender
