#pragma once
// A node's GPUs as a DRA driver publishes them (ResourceSlices, resource_slice_view.h), kept by the
// cluster view per slice, and what they make of the node's GPU facts: where a node has any, they take
// the place of its GPU labels and allocatable (CachedNode::with_dra_gpus), so every rule reads them.
//
// The unit is the physical GPU, as the allocator sees it: one GPU may be published as several devices
// (a whole "gpu-0", its MIG devices, its vfio passthrough device, and with partitionable devices all of
// them consuming the GPU's counter set), and a claim holding any of them holds that GPU. A GPU is free
// for whole-GPU pods only when its whole device is published in a complete newest generation of its pool
// and carries no NoSchedule/NoExecute taint; the others (in MIG mode, vfio only, being republished,
// tainted) count as GPUs of the node that are in use.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpu_extender/common/device_taint.h"
#include "gpu_extender/common/device_taint_rule_view.h"
#include "gpu_extender/common/resource_claim_view.h"
#include "gpu_extender/common/resource_slice_view.h"
#include "gpu_extender/common/view_schema.h"

namespace gpu_extender {

// One device of the schema's driver, as the view keeps it.
struct DraDevice {
  enum class Kind : uint8_t {
    kWholeGpu,   // type dra_gpu_type (or no type): what a whole-GPU claim gets
    kPartition,  // of a GPU (MIG): parentUUID, or consuming a counter set, type not dra_gpu_type
    kOther,      // another view of a GPU (vfio passthrough) or another kind of device
  };
  std::string name;  // in its pool: "gpu-0", "gpu-3-mig-1g10gb-19-0", "gpu-vfio-0"
  Kind kind = Kind::kWholeGpu;
  std::string model;         // as the driver names it: "NVIDIA H100 80GB HBM3"
  std::string architecture;  // "Hopper", "Ada Lovelace"
  int64_t memory_bytes = -1;  // -1: not published
  // What names its physical GPU, each as "pci:<bus id>", "uuid:<GPU uuid>" (a partition's parent's) or
  // "counters:<counter set>": two devices of a pool sharing one are the same GPU.
  std::vector<std::string> physical;
  std::vector<DeviceTaint> taints;  // those that prevent allocation (NoSchedule, NoExecute)
};

// One slice, as the view keeps it: its node, pool and the pool's generation and size, and its devices
// of the schema's driver (a slice of another driver keeps none).
struct DraSlice {
  std::string name, node, pool;
  int64_t generation = 0, pool_slices = 1;
  bool of_driver = false;  // published by the schema's driver (else the view ignores it)
  std::vector<DraDevice> devices;
  static DraSlice of(const ResourceSliceView& slice, const ViewSchema& schema);
};
using DraSlices = std::map<std::string, DraSlice, std::less<>>;  // a node's slices, by name

// A DeviceTaintRule, as the view keeps it: the devices of the schema's driver it selects (by pool and
// device name, each unset for any) and its taint, when that prevents allocation (NoSchedule, NoExecute).
struct DraTaintRule {
  std::string name;
  bool selects_any = false;  // it has a selector that admits the schema's driver, and a taint that counts
  std::optional<std::string> pool, device;
  DeviceTaint taint;
  bool selects(std::string_view device_pool, std::string_view device_name) const {
    return selects_any && (!pool || *pool == device_pool) && (!device || *device == device_name);
  }
  static DraTaintRule of(const DeviceTaintRuleView& rule, const ViewSchema& schema);
};
using DraTaintRules = std::map<std::string, DraTaintRule, std::less<>>;  // by name

// A node's physical GPUs, from all its slices: only each pool's newest generation counts; a device
// carries its slice's taints and those of the rules that select it.
struct DraNodeGpus {
  struct Gpu {
    std::string key;  // "pool/gpu-3": its whole device's name, or for a GPU in MIG mode its parent's
    bool whole = false;  // its whole device is published (not in MIG mode, not vfio only)
    std::string model, architecture;  // of its whole device, else of its partitions
    int64_t memory_bytes = -1;         // of its whole device
    bool pool_complete = true;  // all the newest generation's slices are listed (else not allocatable)
    std::vector<DeviceTaint> taints;  // of its whole device
    bool tainted() const { return whole && pool_complete && !taints.empty(); }
    // Free for a whole-GPU claim that tolerates no taint, unless a claim holds it.
    bool available() const { return whole && pool_complete && taints.empty(); }
  };
  std::vector<Gpu> gpus;
  // The GPU (its key) each device ("pool/device") is part of.
  std::unordered_map<std::string, std::string> gpu_of;
  static DraNodeGpus of(const DraSlices& slices, const DraTaintRules& rules = {});
  // "pool/device": how a device is named across pools.
  static std::string device_key(std::string_view pool, std::string_view device);
  // The GPU a claim holding a device ("pool/device") occupies: its physical GPU's key, or for a device
  // the slices do not show (not published yet, or another kind) the device's own key, so it counts once.
  const std::string& occupied(const std::string& device) const;
};

// What an allocated claim holds, as the view keeps it: its node and the devices of the schema's driver
// (pool and device name) it holds; the pods it is reserved for or owned by.
struct DraClaim {
  std::string key;  // "namespace/name"
  std::string node;
  struct Device {
    std::string pool, device;
  };
  std::vector<Device> devices;  // results with adminAccess hold nothing and are left out
  std::vector<std::string> pods;  // uids
  // GPUs its spec asks for: the counts of its requests of a GPU device class (ViewSchema::dra_gpu_classes).
  // A request of every matching device (All), of alternatives (firstAvailable), of a share of a device's
  // capacity (KEP-5075: a device others share may serve it, which only the allocator can weigh) or with
  // adminAccess (devices others hold) is not counted.
  int64_t requested_gpus = 0;
  std::vector<DeviceToleration> tolerations;  // of its counted GPU requests: device taints it accepts
  // A claim, or a template (no allocation, no pods: its requests only).
  static DraClaim of(const ResourceClaimView& claim, const ViewSchema& schema);
};

// What a node's slices say of its GPUs, all slices together.
struct DraGpuSummary {
  int64_t count = 0;                  // physical GPUs, free or not
  std::string model;                  // the model most of them are, as GPU Feature Discovery writes it
  std::optional<int64_t> memory_mib;  // the smallest memory of the whole devices; none when one has none
  std::string family;                 // the architecture most of them are, as GFD's family ("ada-lovelace")
  // Per GPU that only its taints keep from claims: those taints (a claim tolerating them may have it).
  std::vector<std::vector<DeviceTaint>> tainted;
  static DraGpuSummary of(const DraNodeGpus& gpus);
};

// DRA over the whole cluster view (metrics): slices and the nodes they give GPUs, their GPUs, the
// claims holding GPUs, and the GPUs claims hold or that no whole-GPU claim can get.
struct DraStats {
  size_t slices = 0, nodes = 0, claims = 0;
  int64_t gpus = 0, held_gpus = 0, unavailable_gpus = 0;
};
// One node's DRA part (explain): its slices, its GPUs ("pool/device"), per GPU a claim holds the claim
// ("namespace/name"), and per GPU no whole-GPU claim can get why.
struct DraNodeReport {
  std::vector<std::string> slices, gpus;
  std::vector<std::pair<std::string, std::string>> held, unavailable;
};

// GPU Feature Discovery's form of a product name: characters outside [A-Za-z0-9-_. ] dropped, spaces
// to dashes ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3"), so that a pod's "H100" matches both.
std::string gfd_product_name(std::string_view name);
// GFD's form of an architecture (go-nvlib's name, as the DRA driver publishes it): lower case, spaces
// to dashes ("Ada Lovelace" -> "ada-lovelace").
std::string gfd_family_name(std::string_view architecture);

}  // namespace gpu_extender
