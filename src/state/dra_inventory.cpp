// A node's DRA GPUs: see dra_inventory.h.
#include "gpu_extender/state/dra_inventory.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace gpu_extender {
namespace {
// The value most of `values` are (the first of them on a tie); "" when none.
std::string most_common(const std::vector<std::string>& values) {
  std::map<std::string, size_t> counts;
  for (const auto& v : values) ++counts[v];
  std::string best;
  size_t most = 0;
  for (const auto& v : values)
    if (counts[v] > most) {
      most = counts[v];
      best = v;
    }
  return best;
}

// Disjoint sets over device indexes: devices naming the same physical GPU end in one set.
struct DisjointSets {
  std::vector<size_t> parent;
  explicit DisjointSets(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), size_t{0}); }
  size_t find(size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }
  void join(size_t a, size_t b) { parent[find(a)] = find(b); }
};
}  // namespace

DraSlice DraSlice::of(const ResourceSliceView& slice, const ViewSchema& schema) {
  DraSlice out{std::string(slice.name), std::string(slice.node_name), std::string(slice.pool),
               slice.pool_generation, slice.pool_slice_count, slice.driver == schema.dra_gpu_driver, {}};
  if (!out.of_driver) return out;
  for (const DraDeviceView& d : slice.devices) {
    DraDevice dev;
    dev.name = d.name;
    if (!d.type || *d.type == schema.dra_gpu_type) dev.kind = DraDevice::Kind::kWholeGpu;
    else if (d.parent_uuid || !d.counter_sets.empty()) dev.kind = DraDevice::Kind::kPartition;
    else dev.kind = DraDevice::Kind::kOther;
    dev.model = d.model.value_or("");
    dev.architecture = d.architecture.value_or("");
    dev.memory_bytes = d.memory_bytes.value_or(-1);
    if (d.pci_bus_id && !d.pci_bus_id->empty()) dev.physical.push_back("pci:" + std::string(*d.pci_bus_id));
    if (dev.kind == DraDevice::Kind::kWholeGpu && d.uuid && !d.uuid->empty())
      dev.physical.push_back("uuid:" + std::string(*d.uuid));
    if (dev.kind == DraDevice::Kind::kPartition && d.parent_uuid && !d.parent_uuid->empty())
      dev.physical.push_back("uuid:" + std::string(*d.parent_uuid));
    for (const std::string_view set : d.counter_sets) dev.physical.push_back("counters:" + std::string(set));
    // A whole GPU is one even when nothing ties it to others; another kind of device that names no
    // physical GPU is not a GPU at all.
    if (dev.physical.empty()) {
      if (dev.kind == DraDevice::Kind::kOther) continue;
      dev.physical.push_back("device:" + dev.name);
    }
    for (const DeviceTaint& t : d.taints)
      if (t.prevents_allocation()) dev.taints.push_back(t);
    out.devices.push_back(std::move(dev));
  }
  return out;
}

DraTaintRule DraTaintRule::of(const DeviceTaintRuleView& rule, const ViewSchema& schema) {
  DraTaintRule out;
  out.name = rule.name;
  out.selects_any = rule.has_selector && (!rule.driver || *rule.driver == schema.dra_gpu_driver) &&
                    rule.taint.prevents_allocation();
  if (rule.pool) out.pool = std::string(*rule.pool);
  if (rule.device) out.device = std::string(*rule.device);
  out.taint = rule.taint;
  return out;
}

DraNodeGpus DraNodeGpus::of(const DraSlices& slices, const DraTaintRules& rules) {
  // Each pool's newest generation, and how many of its slices are listed (the allocator's GatherPools:
  // older slices are ignored; a pool missing some of its newest slices is not allocated from).
  struct PoolState {
    int64_t generation = -1, declared = 0, listed = 0;
  };
  std::map<std::string_view, PoolState> pools;
  for (const auto& [name, slice] : slices) {
    PoolState& p = pools[slice.pool];
    if (slice.generation > p.generation) p = {slice.generation, slice.pool_slices, 0};
    if (slice.generation == p.generation) ++p.listed;
  }
  struct Placed {
    const DraSlice* slice;
    const DraDevice* device;
  };
  std::vector<Placed> devices;
  for (const auto& [name, slice] : slices)
    if (slice.generation == pools[slice.pool].generation)
      for (const DraDevice& d : slice.devices) devices.push_back({&slice, &d});
  DisjointSets sets(devices.size());
  std::map<std::string, size_t> first_with;  // "pool\x1fidentity" -> a device naming it
  for (size_t i = 0; i < devices.size(); ++i)
    for (const std::string& id : devices[i].device->physical) {
      auto [at, added] = first_with.emplace(devices[i].slice->pool + '\x1f' + id, i);
      if (!added) sets.join(i, at->second);
    }
  std::map<size_t, std::vector<size_t>> members;  // by set, in device order
  for (size_t i = 0; i < devices.size(); ++i) members[sets.find(i)].push_back(i);

  DraNodeGpus out;
  for (const auto& [root, indexes] : members) {
    const DraSlice& slice = *devices[indexes.front()].slice;
    const PoolState& pool = pools[slice.pool];
    Gpu gpu;
    gpu.pool_complete = pool.listed == pool.declared;
    const DraDevice* whole = nullptr;
    const DraDevice* partition = nullptr;
    for (const size_t i : indexes) {
      const DraDevice* d = devices[i].device;
      if (d->kind == DraDevice::Kind::kWholeGpu && whole == nullptr) whole = d;
      if (d->kind == DraDevice::Kind::kPartition && partition == nullptr) partition = d;
    }
    const DraDevice* described = whole ? whole : partition ? partition : devices[indexes.front()].device;
    gpu.whole = whole != nullptr;
    gpu.model = described->model;
    gpu.architecture = described->architecture;
    if (whole) {
      gpu.memory_bytes = whole->memory_bytes;
      gpu.taints = whole->taints;
      for (const auto& [name, rule] : rules)
        if (rule.selects(slice.pool, whole->name)) gpu.taints.push_back(rule.taint);
      gpu.key = device_key(slice.pool, whole->name);
    } else if (const size_t mig = partition ? partition->name.find("-mig-") : std::string::npos;
               mig != std::string::npos) {
      gpu.key = device_key(slice.pool, partition->name.substr(0, mig));  // NVIDIA's "gpu-<minor>-mig-..."
    } else {
      gpu.key = device_key(slice.pool, described->physical.front());
    }
    for (const size_t i : indexes) out.gpu_of.emplace(device_key(slice.pool, devices[i].device->name), gpu.key);
    out.gpus.push_back(std::move(gpu));
  }
  std::sort(out.gpus.begin(), out.gpus.end(), [](const Gpu& a, const Gpu& b) { return a.key < b.key; });
  return out;
}

std::string DraNodeGpus::device_key(std::string_view pool, std::string_view device) {
  return std::string(pool).append("/").append(device);
}

const std::string& DraNodeGpus::occupied(const std::string& device) const {
  auto at = gpu_of.find(device);
  return at != gpu_of.end() ? at->second : device;
}

DraClaim DraClaim::of(const ResourceClaimView& claim, const ViewSchema& schema) {
  DraClaim out;
  out.key = std::string(claim.ns) + "/" + std::string(claim.name);
  out.node = claim.node;
  for (const DraResultView& r : claim.results)
    if (r.driver == schema.dra_gpu_driver && !r.admin_access)
      out.devices.push_back({std::string(r.pool), std::string(r.device)});
  for (const std::string_view uid : claim.pods) out.pods.emplace_back(uid);
  for (const DraRequestView& r : claim.requests) {
    const bool gpus = std::find(schema.dra_gpu_classes.begin(), schema.dra_gpu_classes.end(), r.device_class) !=
                      schema.dra_gpu_classes.end();
    if (!gpus || r.all || r.alternatives || r.share || r.admin_access) continue;
    out.requested_gpus += r.count;
    out.tolerations.insert(out.tolerations.end(), r.tolerations.begin(), r.tolerations.end());
  }
  return out;
}

DraGpuSummary DraGpuSummary::of(const DraNodeGpus& gpus) {
  DraGpuSummary s;
  std::vector<std::string> models, families;
  bool all_memory = true, any_whole = false;
  for (const DraNodeGpus::Gpu& gpu : gpus.gpus) {
    ++s.count;
    if (!gpu.model.empty()) models.push_back(gfd_product_name(gpu.model));
    if (!gpu.architecture.empty()) families.push_back(gfd_family_name(gpu.architecture));
    if (gpu.tainted()) s.tainted.push_back(gpu.taints);
    if (!gpu.whole) continue;  // a GPU in MIG mode is not handed out whole: its memory is not asked
    any_whole = true;
    if (gpu.memory_bytes < 0) all_memory = false;
    else if (constexpr int64_t kMiB = int64_t{1} << 20; !s.memory_mib || gpu.memory_bytes / kMiB < *s.memory_mib)
      s.memory_mib = gpu.memory_bytes / kMiB;
  }
  if (!all_memory || !any_whole) s.memory_mib.reset();
  s.model = most_common(models);
  s.family = most_common(families);
  return s;
}

std::string gfd_product_name(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == ' ') out.push_back('-');
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') out.push_back(c);
  }
  return out;
}

std::string gfd_family_name(std::string_view architecture) {
  std::string out;
  for (const char c : architecture) out.push_back(c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

}  // namespace gpu_extender
