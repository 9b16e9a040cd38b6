#pragma once
// The cluster view's DRA store (cluster_view.h): ResourceSlices, DeviceTaintRules, ResourceClaims and
// their templates, as the watch reports them, and what they make of each node: its physical GPUs
// (dra_inventory.h) and how many of those are in use, held by claims or not free for a whole-GPU claim.
// A claim's event touches only its own node and pods: the GPUs it occupies are counted per node by how
// many claims hold each (a device shared by several claims, or a GPU several of whose partitions are
// held, counts once). A claim may come before the slices naming its devices, a slice before its node.
//
// Not thread-safe: the view keeps it and calls it under its own lock. Each change says what it did to
// the view's entries as it happens (DraChanges), and the view applies that to its nodes' objects and usage; the store
// knows nothing of pods' requests, slots or versions.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpu_extender/common/pod_request.h"
#include "gpu_extender/state/dra_inventory.h"
#include "gpu_extender/state/stored_kinds.h"
#include "gpu_extender/usage/usage_source.h"  // StringHash

namespace gpu_extender {

// A node as DRA has it; the store keeps one while the node has slices or claims hold devices there.
struct DraNodePart {
  DraSlices slices;       // of the schema's driver, by name
  DraNodeGpus gpus;       // its physical GPUs, from `slices`
  DraGpuSummary summary;  // of `gpus`: what the node's GPU facts become (CachedNode::with_dra_gpus)
  // The devices claims hold here ("pool/device"), each with how many claims hold it; and their physical
  // GPUs (DraNodeGpus::occupied), resolved anew whenever either changes, so a claim seen before its
  // slices, or a pool republished under it, still holds the GPU its device is part of, once.
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> held_devices;
  std::unordered_set<std::string, StringHash, std::equal_to<>> held_gpus;
  int64_t in_use = 0;  // GPUs held by claims, or not free for a whole-GPU claim: counted as used
};

// What a change of the DRA store touches, told as it happens, so the view applies each to its entries
// in the same step (ClusterView::DraApplier), with nothing collected or copied on the way. The store is
// consistent whenever it calls these, and they do not call back into it to change anything. `part`:
// what DRA has of the node now, null when nothing any more. A node may be told more than once a change
// (a relist takes each slice away, then adds it back).
class DraChanges {
 public:
  // The node's GPUs changed (its slices, or the taint rules): its object is made again.
  virtual void gpus_changed(const std::string& node, const DraNodePart* part) = 0;
  // What claims hold on the node changed: how many of its GPUs are in use may have.
  virtual void holds_changed(const std::string& node, const DraNodePart* part) = 0;
  // A claim holding GPUs is now reserved for pod `uid` (true), or none is any more (false): a covered
  // pod's own GPU request does not count, its claim's devices do.
  virtual void covered(const std::string& uid, bool covered) = 0;

 protected:
  ~DraChanges() = default;
};

class DraStore {
 public:
  // The writers, one specialization per DRA kind of stored_kinds.h (dra_store.cpp): an object added
  // or changed, one deleted by its key, a fresh list replacing everything of the kind; what they touch
  // is told to `out` as it happens.
  template <typename Kind> void upsert(typename Kind::Object object, DraChanges& out);
  template <typename Kind> void erase(std::string_view key, DraChanges& out);
  template <typename Kind> void replace(std::vector<typename Kind::Listed> objects, DraChanges& out);

  const DraNodePart* node(std::string_view name) const;
  // GPUs of `node` in use for DRA (0 for a node the store does not keep).
  int64_t in_use_on(std::string_view name) const {
    const DraNodePart* part = node(name);
    return part != nullptr ? part->in_use : 0;
  }
  // Whether a claim holding GPUs is reserved for pod `uid`.
  bool covers(std::string_view uid) const { return claimed_pods_.find(uid) != claimed_pods_.end(); }
  // ClusterView::claimed_gpus_of.
  int64_t claimed_gpus_of(const PodRequest& pod, std::vector<DeviceToleration>* tolerations) const;

  DraStats stats() const;
  std::optional<DraNodeReport> report(std::string_view node) const;

 private:
  struct ClaimEntry {
    std::string node;
    std::vector<std::string> devices;  // "pool/device", as counted in held_devices
    std::vector<std::string> pods;
  };
  // GPUs asked by a claim or template that asks some, allocated or not.
  struct ClaimAsk {
    int64_t gpus = 0;
    std::vector<DeviceToleration> tolerations;
  };
  using Asks = std::unordered_map<std::string, ClaimAsk, StringHash, std::equal_to<>>;
  static void set_asked(Asks& asks, std::string key, int64_t gpus, std::vector<DeviceToleration> tolerations = {});

  using NodeParts = std::unordered_map<std::string, DraNodePart, StringHash, std::equal_to<>>;
  NodeParts::iterator part_for(const std::string& node);  // created when missing
  // The node's part, or null once it was erased for keeping nothing (no slices, no held devices).
  const DraNodePart* erase_if_empty(NodeParts::iterator it);
  void refresh(DraNodePart& part);  // gpus and summary from slices, then recount
  static void recount(DraNodePart& part);  // held_gpus and in_use anew
  void refresh_all(DraChanges& out);  // every node with slices, after the taint rules changed
  void remove_slice(std::string_view name, DraChanges& out);
  void add_slice(DraSlice slice, DraChanges& out);
  void add_claim(DraClaim claim, DraChanges& out);
  void remove_claim(std::string_view key, DraChanges& out);
  void hold(const ClaimEntry& claim, bool hold, DraChanges& out);
  void cover(const std::string& uid, bool cover, DraChanges& out);

  NodeParts nodes_;
  std::unordered_map<std::string, std::string, StringHash, std::equal_to<>> slice_nodes_;  // slice -> node
  DraTaintRules taint_rules_;
  std::unordered_map<std::string, ClaimEntry, StringHash, std::equal_to<>> claims_;  // allocated, holding GPUs
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> claimed_pods_;  // uid -> claims reserved for it
  Asks claim_asks_, template_asks_;  // "namespace/name"
};

}  // namespace gpu_extender
