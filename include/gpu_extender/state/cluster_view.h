#pragma once
// The extender's view of the cluster, fed by the API server's list+watch: per node, the parsed node
// and the GPUs and packed resource in use (effective requests of its pods that have not Succeeded or
// Failed), plus what the placement ledger counts in flight there (placement_ledger.h: pods assumed at
// /bind, room held for pod groups), and a version per node that moves with any of it.
//
// Only what the policy reads is kept: a CachedNode per node and, per pod, its node and requests.
// Thread-safe: request threads read (shared lock) while the watch threads write (exclusive lock).
#include <array>
#include <atomic>
#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu_extender/policy/deletion_cost.h"
#include "gpu_extender/policy/group_preemption.h"
#include "gpu_extender/state/node_source.h"
#include "gpu_extender/state/stored_kinds.h"
#include "gpu_extender/common/pod_request.h"
#include "gpu_extender/usage/usage_source.h"

namespace gpu_extender {

class NodeNameIndex;    // state/node_name_index.h
class DraStore;         // state/dra_store.h
struct DraNodePart;     // state/dra_store.h
class PlacementLedger;  // placement_ledger.h
class GroupBook;        // group_book.h
struct ClusterViewTestWrites;  // tests/unit/state/cluster_view_writes.h

class ClusterView final : public UsageSource, public NodeSource {
 public:
  using Clock = std::chrono::steady_clock;
  ClusterView();
  ~ClusterView() override;

  // Who may change the view. The placement ledger is the one owner of the cluster state: the watch's
  // events reach the view through it (PlacementLedger::observe_*), applied with what they confirm of
  // what is in flight in one call, and what is in flight is counted here only by it and its group book.
  // Every writer takes a Write, and only those make one, so the compiler holds everyone else to it. The
  // view's own tests make one too (ClusterViewTestWrites), to feed a store without a ledger.
  class Write {
    friend class ClusterView;  // a replacing list applies its objects one by one
    friend class PlacementLedger;
    friend class GroupBook;
    friend struct ClusterViewTestWrites;
    Write() = default;
  };

  // --- written by the watch, through the ledger ---
  // The kinds only the view keeps (stored_kinds.h): an object added or changed, one deleted (by its key:
  // a node's or slice's name, a claim's "namespace/name"), and a fresh list that replaces everything of
  // that kind (what the list does not name is gone).
  //   Nodes: a node's object (the specializations below the class, in cluster_view.cpp).
  //   The DRA kinds (ResourceSlices, DeviceTaintRules, ResourceClaims, ResourceClaimTemplates): kept by
  //     the view's DRA store (dra_store.h), which gives a node its GPUs from its slices in place of its
  //     labels' and allocatable's, and counts what claims hold as used (cluster_view_dra.cpp: one
  //     definition for all four).
  template <typename Kind> void upsert(Write, typename Kind::Object object);
  template <typename Kind> void erase(Write, std::string_view key);
  template <typename Kind> void replace(Write, std::vector<typename Kind::Listed> objects);
  // Pods, which the ledger applies with what they confirm of what is in flight: what it stops counting
  // (node, amounts) in the same step as the pod event or list that confirms it, so no reader sees a pod
  // counted twice, or not at all.
  using InFlightRelease = std::vector<std::pair<std::string, ResourceAmounts>>;
  // A pod as the API server reports it; pods without a node or that finished hold nothing.
  void upsert_pod(Write, const PodRequest& pod, const InFlightRelease& released = {});
  void delete_pod(Write, std::string_view uid, const InFlightRelease& released = {});
  struct BoundPod {
    std::string uid;
    std::string node;
    ResourceAmounts requests;
    std::shared_ptr<const CostedPod> costed;  // for pod deletion costs; null when costs do not follow it
    std::string group{};  // "namespace/name" of its pod group, "" outside groups
    std::shared_ptr<const PreemptionVictim> victim{};  // preemption_victim_of: null when it holds no GPU
  };
  void replace_pods(Write, const std::vector<BoundPod>& pods, const InFlightRelease& released = {});
  // The GPUs a pod asks through its claims (PodRequest::claims): each claim's requested GPUs, from the
  // claim, else from its template; claims and templates the view does not know ask none. With
  // `tolerations`, also the device taints those requests tolerate.
  int64_t claimed_gpus_of(const PodRequest& pod, std::vector<DeviceToleration>* tolerations = nullptr) const;
  // Adds claimed_gpus_of(pod) to `requests`' GPU resource: a pod asking through claims is judged, and
  // once bound counted until a claim reserved for it shows, as asking that many. Nothing for a pod
  // without claims (no lock taken).
  void add_claimed_gpus(const PodRequest& pod, ResourceAmounts& requests,
                        std::vector<DeviceToleration>* tolerations = nullptr) const {
    if (pod.claims.empty()) return;
    if (const int64_t gpus = claimed_gpus_of(pod, tolerations); gpus > 0)
      requests.add(ViewSchema::kGpuResource, gpus * 1000);
  }
  void mark_nodes_synced(Write);  // replace<stored::Nodes> marks them too
  void mark_pods_synced(Write);

  // --- in flight, written by the ledger and its group book ---
  // Counts `amounts` on `node` (or stops counting them) for what the watch does not show yet: pods
  // assumed at /bind, room held for a group's members still to place. Kept across relists.
  void count_in_flight(Write, const std::string& node, const ResourceAmounts& amounts, bool add);
  // Whether the watch shows pod `uid` bound and running.
  bool has_pod(std::string_view uid) const;
  // The bound members of group `group` ("namespace/name") as the watch shows them: uid and node.
  std::vector<std::pair<std::string, std::string>> group_members(std::string_view group) const;

  // --- read by requests ---
  std::optional<ResourceAmounts> used_on(std::string_view node) const override;
  std::string describe() const override;
  bool ready() const override { return nodes_synced_ && pods_synced_; }
  void find_nodes(std::span<const std::string_view> names,
                  std::vector<std::shared_ptr<const CachedNode>>& out) const override;
  // What a request's snapshot (view_snapshot.h) reads of the view, by node slot (a small number the
  // view gives each node for as long as it knows it), under one read lock held while `read` runs. A slot's version is unique over the view's life and changes whenever its node's
  // object or usage does; the clock is the newest version given; the names generation changes whenever
  // a slot is given or taken back (only then do names move between slots).
  class SlotReader {
   public:
    static constexpr uint32_t kNoSlot = UINT32_MAX;
    size_t size() const { return view_.slot_states_.size(); }
    uint64_t version(size_t slot) const { return view_.slot_states_[slot].version; }
    // The node object in `slot` (null for a free slot, or a deleted node whose pods are not gone yet).
    std::shared_ptr<const CachedNode> node(size_t slot) const {
      const NodeEntry* e = view_.slot_states_[slot].entry;
      return e != nullptr ? e->node : nullptr;
    }
    ResourceAmounts used(size_t slot) const {
      const NodeEntry* e = view_.slot_states_[slot].entry;
      return e != nullptr ? e->used : ResourceAmounts{};
    }
    uint64_t clock() const { return view_.version_clock_; }
    // Calls visit(slot) for each change since view version `since` (a slot once per change, oldest
    // first), so that a memo synced at `since` catches up in proportion to what changed, not to the
    // cluster's size. False, visiting nothing, when the view has forgotten some of those changes.
    template <typename Visit>
    bool visit_changed_since(uint64_t since, Visit&& visit) const {
      const uint64_t now = view_.version_clock_;
      if (since > now || now - since > kChangeLogSize) return false;
      for (uint64_t v = since + 1; v <= now; ++v) visit(view_.change_log_[v % kChangeLogSize]);
      return true;
    }
    uint64_t names_generation() const { return view_.names_generation_; }
    // Each name's slot (kNoSlot for a name the view has no entry for); `hashes`: working space.
    void find(std::span<const std::string_view> names, std::vector<uint64_t>& hashes, std::vector<uint32_t>& slots) const;

   private:
    friend class ClusterView;
    explicit SlotReader(const ClusterView& view) : view_(view) {}
    const ClusterView& view_;
  };
  void read_slots(const std::function<void(const SlotReader&)>& read) const;
  // Group preemption (group_preemption.h): every node with its usage, and what the bound pods that hold
  // GPUs are, copied under one read lock (rare: a group that fits nowhere).
  struct PreemptionSnapshot {
    std::vector<std::shared_ptr<const CachedNode>> nodes;
    std::vector<ResourceAmounts> used;  // per node
    std::vector<PreemptionVictim> pods;
    std::vector<NodeInput> inputs() const;  // pointing into this snapshot
  };
  PreemptionSnapshot preemption_snapshot() const;
  // What a bound pod holds: its node and requests, when the watch shows it.
  std::optional<std::pair<std::string, ResourceAmounts>> pod_usage(std::string_view uid) const;

  // DRA over the whole view (metrics): slices and the nodes they give GPUs, their GPUs, claims, and the
  // GPUs claims hold (dra_inventory.h).
  DraStats dra_stats() const;
  // One node's DRA part (explain); none when the node has neither slices nor claims.
  std::optional<DraNodeReport> dra_node(std::string_view node) const;

  struct Stats {
    size_t nodes = 0, pods = 0;
    size_t node_entries = 0;  // nodes plus deleted nodes that still have pods on them
    double seconds_since_event = -1;  // -1: no event yet
  };
  Stats stats() const;
  // Pod deletion costs: from now on, keep what costs need of the pods they follow (names, scheduler,
  // the cost annotations). Off by default, so a view without the cost writer pays nothing for it.
  void keep_cost_details() { keep_cost_details_ = true; }
  // Group preemption: from now on, keep what preemption reads of bound pods that hold GPUs. Off by
  // default, so a view without the preemptor pays nothing for it.
  void keep_preemption_victims() { keep_victims_ = true; }
  std::shared_ptr<const PreemptionVictim> victim_details_of(const PodRequest& pod, const ResourceAmounts& holds) const {
    return keep_victims_ ? preemption_victim_of(pod, holds) : nullptr;
  }
  // What to keep of `pod` for costs: null unless cost details are kept and costs follow the pod.
  std::shared_ptr<const CostedPod> cost_details_of(const PodRequest& pod) const {
    return keep_cost_details_ ? costed_pod_of(pod) : nullptr;
  }
  // Pod deletion costs: calls `visit` for every bound pod costs follow, with its node and the node's
  // usage, under the view's read lock (keep it short: decide, do not call the API).
  void visit_costed_pods(
      const std::function<void(const CostedPod&, const NodeView&, const ResourceAmounts&)>& visit) const;
  // Each node's GPU model as its labels give it, with the index of the label it came from (in the
  // schema's node_gpu_model_labels): the values the admission webhook's terms must admit.
  void visit_gpu_models(const std::function<void(size_t label, std::string_view model)>& visit) const;

  // GPU sharing by memory, over the nodes in the view (in the shared memory's unit): devices, their
  // free memory, and the part of it that is fragmented: free on devices where it is less than
  // `smallest_pending`, the smallest shared request of the pods pending (PlacementLedger), so no
  // pending pod fits there. Nothing is fragmented while no shared pod is pending (0).
  struct SharedGpuStats {
    int64_t devices = 0, free = 0, fragmented = 0;
    int64_t smallest_pending = 0;  // 0: no pending pod asks shared memory
  };
  SharedGpuStats shared_gpu_stats(int64_t smallest_pending) const;
  void touch(Write);  // an event or bookmark arrived: the view is fresh as of now

  // --- catching up with the scheduler ---
  // Moves with every change of any node or of what is counted on it (watch events, in-flight counts).
  uint64_t change_count() const { return change_count_.load(); }
  // What ends the watch's rest between two batches of events (ApiClient::hurry_watches): true when a
  // watch was resting, so events may be waiting to be read.
  void set_watch_hurry(std::function<bool()> hurry) { watch_hurry_ = std::move(hurry); }
  // For a request about to refuse every node on usage: the scheduler's informer may have seen pods
  // leave (the victims of its preemption) while this view's watch rests between batches. Hurries the
  // watch and waits, until `deadline` at most, for change_count() to move from `seen`; true if it did.
  // False at once when no watch was resting: nothing more is on its way. `expecting`: events are known
  // to be on their way (a preemptor's victims are being deleted), so it waits even then.
  bool catch_up(uint64_t seen, Clock::time_point deadline, bool expecting = false) const;

 private:
  struct PodEntry {
    std::string node;
    ResourceAmounts requests;
    std::shared_ptr<const CostedPod> costed;
    std::string group;
    std::shared_ptr<const PreemptionVictim> victim;
    bool covered;  // a claim holding GPUs is reserved for it: its GPU request is not counted (counted())
  };
  // Per node name: the node object (null until listed, or after deletion while pods remain) and what
  // its pods and what is in flight there hold. One map, so a request needs one lookup per node for both.
  struct NodeEntry {
    std::shared_ptr<const CachedNode> node;    // what the rules read: `listed`, with its DRA GPUs if any
    std::shared_ptr<const CachedNode> listed;  // the node object as the API server has it
    int64_t dra_counted = 0;  // GPUs counted in `used` for DRA (DraStore::NodePart::in_use, when applied)
    ResourceAmounts used;       // the pods the watch shows, plus in_flight, plus dra_counted
    ResourceAmounts in_flight;  // count_in_flight's part of `used`
    uint32_t slot = 0;  // see SlotReader; reused after the entry is erased
  };
  // Per slot, densely: which entry holds it, and its version (from version_clock_, set anew with
  // every change of the entry's node or usage). Names-mode lookups read these (SlotReader), not the map.
  struct SlotState {
    uint64_t version = 0;
    const NodeEntry* entry = nullptr;
  };
  using NodeMap = std::unordered_map<std::string, NodeEntry, StringHash, std::equal_to<>>;
  NodeMap::iterator entry_for(const std::string& name);  // created (with a slot) when missing
  void changed(const NodeEntry& entry) {
    slot_states_[entry.slot].version = ++version_clock_;
    change_log_[version_clock_ % kChangeLogSize] = entry.slot;
    // Sequentially consistent, as change_waiters_ is: a waiter either sees the new count or is woken.
    change_count_.store(version_clock_);
    if (change_waiters_.load() > 0) wake_change_waiters();
  }
  void wake_change_waiters() const;
  void add_usage(const std::string& node, const ResourceAmounts& amounts, bool add);
  void release_in_flight(const InFlightRelease& released);  // under mutex_
  void erase_if_unused(NodeMap::iterator it);
  // `node` made again from `listed` and what DRA has of the node (`dra`: null for nothing), then its
  // DRA count.
  void refresh_node(NodeEntry& entry, const DraNodePart* dra);
  void recount_dra(NodeEntry& entry, const DraNodePart* dra);  // dra_counted (and `used`) from `dra`
  // What a change of the DRA store touches, applied to the entries as it happens (cluster_view_dra.cpp).
  class DraApplier;
  // The entry of a node DRA changed: nodes_.end() when neither the view nor DRA (`dra`) keeps it.
  NodeMap::iterator dra_entry(const std::string& name, const DraNodePart* dra);
  static ResourceAmounts claimed_amounts(const NodeEntry& entry);  // dra_counted as an amount of the GPU resource
  static ResourceAmounts counted(const PodEntry& pod);               // what a pod's entry counts on its node
  void cover_pod(const std::string& uid, bool covered);  // a claim holding GPUs is now reserved for it, or none
  void reindex_if_names_changed();  // at the end of every writer that may add or erase entries
  void add_pod(const std::string& uid, PodEntry entry);  // counted on its node, and in its group
  void erase_pod(std::string_view uid);

  mutable std::shared_mutex mutex_;
  NodeMap nodes_;
  size_t node_objects_ = 0;
  std::unordered_map<std::string, PodEntry, StringHash, std::equal_to<>> pods_;  // by uid, bound and running
  std::unique_ptr<DraStore> dra_;  // slices, taint rules, claims and templates; never null
  // Per group, its bound members: uid -> node.
  using Members = std::unordered_map<std::string, std::string, StringHash, std::equal_to<>>;
  std::unordered_map<std::string, Members, StringHash, std::equal_to<>> groups_;
  std::atomic<bool> nodes_synced_{false}, pods_synced_{false};
  std::atomic<bool> keep_cost_details_{false};
  std::atomic<bool> keep_victims_{false};
  std::unique_ptr<NodeNameIndex> index_;  // the names of nodes_, for lookup(); never null
  std::vector<SlotState> slot_states_;
  bool names_changed_ = false;             // an entry was added or erased since index_ was built
  uint64_t names_generation_ = 1;          // changes whenever an entry (a slot) is added or erased
  uint64_t version_clock_ = 0;
  // The slot of each of the last kChangeLogSize versions (at version % kChangeLogSize): what changed,
  // for SlotReader::visit_changed_since. A burst of binds changes a few slots a pod; a relist all.
  static constexpr uint64_t kChangeLogSize = 8192;
  std::vector<uint32_t> change_log_ = std::vector<uint32_t>(kChangeLogSize, 0);
  std::vector<uint32_t> free_slots_;
  uint32_t next_slot_ = 0;
  std::atomic<int64_t> last_event_ns_{0};
  std::atomic<uint64_t> change_count_{0};
  mutable std::atomic<int> change_waiters_{0};
  mutable std::mutex change_mutex_;  // only for change_cv_: writers take it only when someone waits
  mutable std::condition_variable change_cv_;
  std::function<bool()> watch_hurry_;
};

// Nodes are the view's own store (cluster_view.cpp); the DRA kinds share one definition of each writer,
// instantiated for each in cluster_view_dra.cpp.
template <> void ClusterView::upsert<stored::Nodes>(Write, NodeView node);
template <> void ClusterView::erase<stored::Nodes>(Write, std::string_view name);
template <> void ClusterView::replace<stored::Nodes>(Write, std::vector<std::shared_ptr<const CachedNode>> nodes);

}  // namespace gpu_extender
