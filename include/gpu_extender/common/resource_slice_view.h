#pragma once
// The parts of a resource.k8s.io/v1 ResourceSlice (Dynamic Resource Allocation) the extender reads: the
// node its devices are on, the driver that publishes them, and per device the GPU facts the schema's
// DRA attribute names point at (ViewSchema::dra_*). NVIDIA's GPU driver (driver gpu.nvidia.com)
// publishes each GPU as a device "gpu-<minor>" with attributes productName, architecture and type
// ("gpu"; MIG partitions are "mig", with parentUUID naming their GPU's uuid) and capacity memory (bytes).
//
// Every string is a view into storage owned elsewhere (the parser's buffer), valid only as long as it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_extender {

struct DraDeviceView {
  std::string_view name;
  std::optional<std::string_view> model;         // the model attribute's string
  std::optional<std::string_view> architecture;  // the architecture attribute's string
  std::optional<std::string_view> type;          // the type attribute's string
  std::optional<int64_t> memory_bytes;           // the memory capacity's value
  std::optional<std::string_view> uuid;          // the uuid attribute's string
  std::optional<std::string_view> parent_uuid;   // a partition's parent GPU (the parent attribute's string)
};

struct ResourceSliceView {
  std::string_view name;
  std::string_view node_name;  // spec.nodeName; empty for slices of no single node (network devices)
  std::string_view driver;
  std::string_view pool;  // spec.pool.name
  std::vector<DraDeviceView> devices;
  std::string invalid_reason;  // a device fact that made no sense (left out), for the watch's log
};

}  // namespace gpu_extender
