// A node's DRA GPUs: see dra_inventory.h.
#include "gpu_extender/kube/dra_inventory.h"

#include <algorithm>
#include <cctype>

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
}  // namespace

DraSlice DraSlice::of(const ResourceSliceView& slice, const ViewSchema& schema) {
  DraSlice out{std::string(slice.name), std::string(slice.node_name), std::string(slice.pool), {}, {}};
  if (slice.driver != schema.dra_gpu_driver) return out;
  for (const DraDeviceView& d : slice.devices) {
    if (d.type && *d.type != schema.dra_gpu_type) {  // a partition is no whole GPU, but occupies one
      if (d.parent_uuid) out.partitions.push_back({std::string(d.name), std::string(*d.parent_uuid)});
      continue;
    }
    out.gpus.push_back({std::string(d.name), std::string(d.uuid.value_or("")), std::string(d.model.value_or("")),
                        std::string(d.architecture.value_or("")), d.memory_bytes.value_or(-1)});
  }
  return out;
}

std::string occupied_gpu(const DraSlices& slices, std::string_view pool, std::string_view device) {
  auto key = [&](std::string_view name) { return std::string(pool) + "/" + std::string(name); };
  const std::string* parent = nullptr;
  for (const auto& [name, slice] : slices) {
    if (slice.pool != pool) continue;
    for (const DraPartition& part : slice.partitions)
      if (part.name == device) parent = &part.parent_uuid;
  }
  if (parent == nullptr || parent->empty()) return key(device);
  for (const auto& [name, slice] : slices) {
    if (slice.pool != pool) continue;
    for (const DraGpu& gpu : slice.gpus)
      if (gpu.uuid == *parent) return key(gpu.name);
  }
  return key(device);
}

DraClaim DraClaim::of(const ResourceClaimView& claim, const ViewSchema& schema) {
  DraClaim out;
  out.key = std::string(claim.ns) + "/" + std::string(claim.name);
  out.node = claim.node;
  for (const DraResultView& r : claim.results)
    if (r.driver == schema.dra_gpu_driver) out.devices.push_back({std::string(r.pool), std::string(r.device)});
  for (const std::string_view uid : claim.pods) out.pods.emplace_back(uid);
  for (const DraRequestView& r : claim.requests) {
    const bool gpus = std::find(schema.dra_gpu_classes.begin(), schema.dra_gpu_classes.end(), r.device_class) !=
                      schema.dra_gpu_classes.end();
    if (gpus && !r.all && !r.alternatives && !r.share) out.requested_gpus += r.count;
  }
  return out;
}

DraGpuSummary DraGpuSummary::of(const DraSlices& slices) {
  DraGpuSummary s;
  std::vector<std::string> models, families;
  bool all_memory = true;
  for (const auto& [name, slice] : slices)
    for (const DraGpu& gpu : slice.gpus) {
      ++s.count;
      if (!gpu.model.empty()) models.push_back(gfd_product_name(gpu.model));
      std::string family = gpu.architecture;
      std::transform(family.begin(), family.end(), family.begin(), [](unsigned char c) { return std::tolower(c); });
      if (!family.empty()) families.push_back(family);
      if (gpu.memory_bytes < 0) all_memory = false;
      else if (constexpr int64_t kMiB = int64_t{1} << 20; !s.memory_mib || gpu.memory_bytes / kMiB < *s.memory_mib)
        s.memory_mib = gpu.memory_bytes / kMiB;
    }
  if (!all_memory) s.memory_mib.reset();
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

}  // namespace gpu_extender
