#pragma once
// The parts of a resource.k8s.io/v1 ResourceClaim (Dynamic Resource Allocation) the extender reads: which
// devices its allocation holds (status.allocation.devices.results: driver, pool, device, shareID), on which
// node (status.allocation.nodeSelector's metadata.name field, as the scheduler writes it for a node's own
// devices), and for which pods (status.reservedFor, and the pod that owns a claim made from a template or
// for a DRA extended resource). The scheduler writes all of it in PreBind, after the extender's /filter.
//
// Every string is a view into storage owned elsewhere (the parser's buffer), valid only as long as it.
#include <cstdint>
#include <string_view>
#include <vector>

#include "gpu_extender/common/device_taint.h"

namespace gpu_extender {

struct DraResultView {
  std::string_view driver, pool, device;
  std::string_view share_id;  // empty unless the device is shared between claims (KEP-5075)
  // adminAccess: monitoring or maintenance access to a device others may hold (DCGM-style tools). The
  // allocator does not count such a result as allocated, so it holds nothing.
  bool admin_access = false;
};

// One request of the claim's spec (spec.devices.requests[].exactly): devices of a class, how many. The
// selectors are not read: the scheduler's DynamicResources plugin checks them before any extender.
struct DraRequestView {
  std::string_view device_class;
  int64_t count = 1;         // ExactCount's count (1 when not given)
  bool all = false;          // allocationMode All: every matching device of a node
  bool alternatives = false; // firstAvailable: one of several subrequests, not read
  // exactly.capacity.requests given: a share of a device's capacity (consumable capacity, KEP-5075), which a
  // device other claims already share may still serve; the allocator weighs it, the extender does not.
  bool share = false;
  bool admin_access = false;  // exactly.adminAccess: devices in use by others too, asks none of its own
  std::vector<DeviceToleration> tolerations;  // exactly.tolerations: device taints it accepts
};

struct ResourceClaimView {
  std::string_view ns, name, uid;
  std::string_view node;  // empty while unallocated, or for devices of no single node
  std::vector<DraResultView> results;
  std::vector<std::string_view> pods;  // uids: reservedFor's pods, then the owning pod
  bool extended_resource = false;      // made by the scheduler for a pod's DRA extended resource (KEP-5004)
  std::vector<DraRequestView> requests;  // spec.devices.requests (for a template: spec.spec's)
};

// A ResourceClaimTemplate: its name, namespace and the requests of spec.spec, as a claim made from it
// would ask them. Its own type so that the decoder (wire.h) knows which of the two to read.
struct ResourceClaimTemplateView : ResourceClaimView {};

}  // namespace gpu_extender
