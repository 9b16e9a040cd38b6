#pragma once
// The placement ledger: the one owner of everything in flight between kube-scheduler's verbs and the
// watch. kube-scheduler's cache is the model (assume a pod, then finish binding or forget it) with the
// framework's per-cycle state kept apart:
//
//   - pending pods: seen in /filter or /prioritize, kept for their /bind (its body names only the pod);
//   - expected binds: pods that passed /filter or were scored, whose /bind the next pod's verbs may
//     wait for (kube-scheduler binds asynchronously: bind_expectations.h);
//   - assumed pods: counted on their node from /bind until the watch shows them bound (or the TTL);
//   - pod groups (group_book.h): their plans, the room held for members still to place, the members
//     that passed, the gate.
//
// What is in flight is counted on its node in the cluster view (ClusterView::count_in_flight) so that
// every verb reads one usage per node; the view is the watch's store and knows nothing of why.
//
// Each operation is one step of what the scheduler does, atomic under the ledger's one lock:
//
//   /filter, /prioritize   remember_pending, wait_for_binds_before (the binds of the pods judged before),
//                          admit (a group member: its group's plan), expect_bind
//   /bind                  take_pending, reserve or reserve_shared_gpu (counted on its node, on the
//                          device it picks for a shared GPU; a group member's slot taken; its expected
//                          bind arrived, all in one step), or bind_answered (refused before counting),
//                          wait_at_gate (a group member: until every member passed), then commit or
//                          roll_back (the whole undo: the slot held again, the pod no longer counted)
//   the watch              observe_pod, observe_pod_deleted, observe_relist: the event or list applied to
//                          the view, and the assumptions it confirms released, in one step of the view
//                          (no reader sees a pod counted twice, or not at all)
//   housekeeping           expire: assumptions the watch never confirmed, pending pods never bound,
//                          groups without progress for the TTL
//
// Lock order: the ledger's lock, then the view's; the view never calls the ledger. Thread-safe.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/state/group_book.h"

namespace gpu_extender {

// How often /filter and /prioritize waited for the /bind of the pod before (bind_expectations.h).
struct BindWaitStats {
  uint64_t waits = 0;         // requests that had to wait
  uint64_t timeouts = 0;      // expected binds that never came
  double waited_seconds = 0;  // total time spent waiting
  bool enabled = true;
};

class BindExpectations;  // state/bind_expectations.h

struct LedgerOptions {
  std::chrono::milliseconds assume_ttl{30000};    // an assumed pod the watch never shows bound
  std::chrono::milliseconds pending_ttl{300000};  // a pod seen in /filter and never bound
  std::chrono::milliseconds group_ttl{120000};    // room held for a group without progress
  std::chrono::milliseconds group_gate{4000};     // a member's /bind waits this long for the rest
  bool group_preemption = true;                   // groups that fit nowhere may have room made by eviction
  std::chrono::milliseconds group_preemption_wait{600000};  // for the victims to leave
};

class PlacementLedger {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxPending = 4096;

  explicit PlacementLedger(std::shared_ptr<ClusterView> view, LedgerOptions options = {});
  ~PlacementLedger();

  // --- /filter and /prioritize ---
  // A pod seen in /filter or /prioritize: /bind needs its requests and scheduler (its body has
  // neither). Kept until its bind, for at most pending_ttl, and at most kMaxPending pods.
  void remember_pending(const PodRequest& pod);
  // Pod `uid` passed /filter or was scored: its /bind is expected within `max_wait` (0: not at all).
  void expect_bind(std::string_view uid, std::chrono::milliseconds max_wait);
  // Before judging pod `uid`: waits until no other pod's bind is expected. Returns how long it waited.
  std::chrono::nanoseconds wait_for_binds_before(std::string_view uid);
  // A group member's plan (GroupBook::admit).
  GroupBook::Admission admit(const PodRequest& pod, const GroupSpec& spec, const Policy& policy, const GroupBook::Candidates& candidates,
                             const GroupBook::AnySent& any_sent);

  // --- group preemption (GroupBook's, under the ledger's lock) ---
  std::vector<GroupBook::RoomWanted> groups_wanting_room();
  bool hold_for_preemption(const std::string& group, const GroupPreemptionPlan& plan, const Policy& policy);
  void preemption_failed(const std::string& group, const std::string& why);
  void victim_evicted();

  // --- /bind ---
  std::optional<PendingPod> take_pending(std::string_view uid);
  // Counts `counted` (the pod's requests, on its shared GPU's device) on `node` at once, until the
  // watch shows the pod bound or the assume TTL passes; a group member takes its slot there in the
  // same step (the next member's /filter must never see both the pod and the room held for it).
  // Its expected bind has arrived in the same step: a verb waiting for it sees the pod counted.
  void reserve(const PendingPod& pod, const std::string& node, const ResourceAmounts& counted);
  // A pod sharing a GPU by memory: `pick` chooses its device on `node` as the view has it now (the node
  // object, null when the view has none, and its usage with everything in flight) and says what to
  // count there; that is reserved in the same step, so two binds to one node never take the same free
  // memory. Nothing is reserved when it picks nothing (then the caller says bind_answered).
  using SharedGpuPick = std::function<std::optional<ResourceAmounts>(
      const std::shared_ptr<const CachedNode>& node, const std::optional<ResourceAmounts>& used)>;
  bool reserve_shared_gpu(const PendingPod& pod, const std::string& node, const SharedGpuPick& pick);
  // Pod `uid`'s /bind was answered without counting it (refused, or bound already): nothing to wait for.
  void bind_answered(std::string_view uid);
  // A group member: waits until every member has passed (GroupBook::wait_at_gate). Others pass at once.
  GroupBook::Gate wait_at_gate(const PendingPod& pod);
  // The bind succeeded: the group is placed once all its members have.
  void commit(const PendingPod& pod);
  // The bind failed, or the gate refused it: the whole undo. A member's slot is held again (its retry
  // is planned there) and the pod no longer counts on its node.
  void roll_back(const PendingPod& pod);

  // --- the watch: applies each event or list to the view itself (ClusterView::Write) ---
  // Pods: the event or list, and the assumptions it confirms released, in one step.
  void observe_pod(const PodRequest& pod);
  void observe_pod_deleted(std::string_view uid);
  void observe_relist(const std::vector<ClusterView::BoundPod>& pods);
  void observe_pods_synced();
  // Nodes applied one by one (a tool's file, not a list): their list marks them (observe_list).
  void observe_nodes_synced();
  // The kinds only the view keeps (stored_kinds.h: nothing in flight waits for them), as the view's
  // writer of that kind (ClusterView::upsert, erase, replace). No ledger lock: nothing the ledger holds
  // depends on them, and the view's own lock makes each call atomic for the verbs.
  template <typename Kind>
  void observe(typename Kind::Object object) {
    view_->upsert<Kind>(ClusterView::Write{}, std::move(object));
  }
  template <typename Kind>
  void observe_deleted(std::string_view key) {
    view_->erase<Kind>(ClusterView::Write{}, key);
  }
  template <typename Kind>
  void observe_list(std::vector<typename Kind::Listed> objects) {
    view_->replace<Kind>(ClusterView::Write{}, std::move(objects));
  }
  // An event or bookmark arrived: the view is fresh as of now.
  void observe_heard();

  // --- housekeeping ---
  struct Expired {
    size_t assumed = 0, pending = 0, groups = 0;
  };
  Expired expire(Clock::time_point now = Clock::now());
  // No assumed pod expires before `until` (the watch that would confirm them is down).
  void hold_assumed_until(Clock::time_point until);

  // --- reads ---
  // What a victim frees: its node and requests, bound (the watch) or assumed.
  std::optional<std::pair<std::string, ResourceAmounts>> pod_usage(std::string_view uid) const;
  // The smallest shared GPU memory a pending pod asks, in the policy's unit; 0 when none does.
  int64_t smallest_pending_shared_gpu_memory() const;
  struct Stats {
    size_t assumed = 0, pending = 0;
    GroupBook::Stats groups;
  };
  BindWaitStats bind_wait_stats() const;
  Stats stats() const;
  std::optional<GroupBook::Report> group_report(const std::string& key) const;
  // Called with the seconds from a group's first member to its last bind, as each group is placed.
  void on_group_placed(std::function<void(double)> observer);
  const LedgerOptions& options() const { return options_; }
  const std::shared_ptr<ClusterView>& view() const { return view_; }

 private:
  struct Assumed {
    std::string node;
    ResourceAmounts requests;
    Clock::time_point expires;
  };
  struct Pending {
    PendingPod pod;
    Clock::time_point seen;
  };
  void forget_assumed(std::string_view uid);  // under mutex_
  // Under mutex_: counts `counted` on `node` until the watch confirms it; the pod's bind has arrived.
  void reserve_locked(const PendingPod& pod, const std::string& node, const ResourceAmounts& counted);
  // Under mutex_: the assumption ends, its in-flight count added to `released` for the view to drop.
  void take_assumed(std::string_view uid, ClusterView::InFlightRelease& released);

  std::shared_ptr<ClusterView> view_;
  LedgerOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Assumed, StringHash, std::equal_to<>> assumed_;  // by uid
  std::unordered_map<std::string, Pending, StringHash, std::equal_to<>> pending_;  // by uid, bounded
  GroupBook groups_;                                                               // under mutex_
  std::unique_ptr<BindExpectations> expected_binds_;                               // under mutex_
  std::condition_variable bind_arrived_;  // an expected bind arrived (wait_for_binds_before)
};

}  // namespace gpu_extender
