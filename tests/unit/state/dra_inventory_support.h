#pragma once
// The DRA test bed of the cluster view's tests (dra_inventory_test.cpp, dra_claims_test.cpp): devices and
// ResourceSlices shaped as NVIDIA's DRA driver (k8s-dra-driver-gpu) publishes them, DRA nodes, and
// the claims and requests that hold and ask for their devices.
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/state/cluster_view.h"

namespace dra_inventory_support {

using namespace gpu_extender;

constexpr int64_t kMiB = int64_t{1} << 20;
inline const ViewSchema kSchema;

// Devices as the driver's deviceinfo.go writes them. The strings live as long as the test (literals, or
// the `keep` list), since DraDeviceView holds views.
inline std::list<std::string>& keep() {
  static std::list<std::string> strings;
  return strings;
}
inline std::string_view kept(std::string s) { return keep().emplace_back(std::move(s)); }
inline std::string pci_of(int minor) { return "0000:" + std::to_string(0x10 + minor) + ":00.0"; }

inline DraDeviceView device(std::string name, std::string_view type, std::optional<std::string> pci_bus_id = {}) {
  DraDeviceView d;
  d.name = kept(std::move(name));
  d.type = type;
  if (pci_bus_id) d.pci_bus_id = kept(std::move(*pci_bus_id));
  return d;
}
inline DraDeviceView whole_gpu(int minor, std::string_view product = "NVIDIA H100 80GB HBM3",
                               std::string_view architecture = "Hopper", int64_t memory_mib = 81559) {
  DraDeviceView d = device("gpu-" + std::to_string(minor), "gpu", pci_of(minor));
  d.model = product;
  d.architecture = architecture;
  d.memory_bytes = memory_mib * kMiB;
  d.uuid = kept("GPU-uuid-" + std::to_string(minor));
  return d;
}
// A MIG device of GPU `minor` (in MIG mode: no whole device published for it), profile 1g.10gb.
inline DraDeviceView mig_device(int minor, int start, std::string_view product = "NVIDIA A100-SXM4-80GB") {
  DraDeviceView d = device("gpu-" + std::to_string(minor) + "-mig-1g10gb-19-" + std::to_string(start), "mig", pci_of(minor));
  d.model = product;
  d.architecture = "Ampere";
  d.memory_bytes = 9728 * kMiB;
  d.uuid = kept("MIG-uuid-" + std::to_string(minor) + "-" + std::to_string(start));
  d.parent_uuid = kept("GPU-uuid-" + std::to_string(minor));
  return d;
}

inline ResourceSliceView slice_view(std::string_view name, std::string_view node, std::vector<DraDeviceView> devices,
                                    int64_t generation = 1, int64_t slices_in_pool = 1) {
  ResourceSliceView s;
  s.name = name;
  s.node_name = node;
  s.driver = "gpu.nvidia.com";
  s.pool = node;  // the driver's pool is its node
  s.pool_generation = generation;
  s.pool_slice_count = slices_in_pool;
  s.devices = std::move(devices);
  return s;
}
inline DraSlice slice_of(std::string_view name, std::string_view node, std::vector<DraDeviceView> devices,
                         int64_t generation = 1, int64_t slices_in_pool = 1) {
  return DraSlice::of(slice_view(name, node, std::move(devices), generation, slices_in_pool), kSchema);
}
inline DraSlice h100s(std::string_view name, std::string_view node, int gpus, int64_t memory_mib = 81559, int first = 0) {
  std::vector<DraDeviceView> devices;
  for (int i = first; i < first + gpus; ++i) devices.push_back(whole_gpu(i, "NVIDIA H100 80GB HBM3", "Hopper", memory_mib));
  return slice_of(name, node, std::move(devices));
}

inline NodeView bare_node(std::string_view name) {  // a DRA node: no GPU labels, no nvidia.com/gpu allocatable
  NodeView n;
  n.name = name;
  return n;
}
inline DraClaim claim_of(const std::string& key, const std::string& node, std::vector<std::string> devices,
                         std::vector<std::string> pods = {}) {
  DraClaim c;
  c.key = key;
  c.node = node;
  c.pods = std::move(pods);
  for (auto& d : devices) c.devices.push_back({node, std::move(d)});
  return c;
}
inline DraRequestView request(std::string_view device_class, int64_t count = 1) {
  DraRequestView r;
  r.device_class = device_class;
  r.count = count;
  return r;
}

}  // namespace dra_inventory_support
