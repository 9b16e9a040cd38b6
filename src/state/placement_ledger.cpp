// The placement ledger: see placement_ledger.h for what it owns and the order of its steps.
#include "gpu_extender/state/placement_ledger.h"

#include <algorithm>
#include <unordered_set>

#include "gpu_extender/common/quantity.h"
#include "state/bind_expectations.h"

namespace gpu_extender {

PlacementLedger::PlacementLedger(std::shared_ptr<ClusterView> view, LedgerOptions options)
    : view_(std::move(view)),
      options_(options),
      groups_(view_, GroupBook::Options{options.group_ttl, options.group_gate, options.group_preemption,
                                        options.group_preemption_wait}),
      expected_binds_(std::make_unique<BindExpectations>()) {}

PlacementLedger::~PlacementLedger() = default;

void PlacementLedger::expect_bind(std::string_view uid, std::chrono::milliseconds max_wait) {
  if (max_wait.count() <= 0) return;
  std::lock_guard lock(mutex_);
  expected_binds_->expect(uid, Clock::now() + max_wait);
}

std::chrono::nanoseconds PlacementLedger::wait_for_binds_before(std::string_view uid) {
  std::unique_lock lock(mutex_);
  if (expected_binds_->empty()) return {};
  const auto started = Clock::now();
  bool waited = false;
  while (true) {
    const Clock::time_point until = expected_binds_->next_deadline_of_others(uid, Clock::now());
    if (until == Clock::time_point::max()) break;  // nothing expected but this pod's own bind
    waited = true;
    bind_arrived_.wait_until(lock, until);
  }
  const auto took = Clock::now() - started;
  if (waited) expected_binds_->waited(took);
  return took;
}

void PlacementLedger::bind_answered(std::string_view uid) {
  bool was_expected = false;
  {
    std::lock_guard lock(mutex_);
    was_expected = expected_binds_->arrived(uid);
  }
  if (was_expected) bind_arrived_.notify_all();
}

BindWaitStats PlacementLedger::bind_wait_stats() const {
  std::lock_guard lock(mutex_);
  return expected_binds_->stats();
}

void PlacementLedger::remember_pending(const PodRequest& pod) {
  if (pod.uid.empty()) return;
  const auto now = Clock::now();
  std::lock_guard lock(mutex_);
  if (auto it = pending_.find(pod.uid); it != pending_.end()) {
    it->second.seen = now;  // the same pod again (/prioritize after /filter): nothing new to copy
    return;
  }
  if (pending_.size() >= kMaxPending) {
    // More pods between /filter and /bind than any scheduler has: drop the oldest half.
    std::vector<Clock::time_point> seen;
    seen.reserve(pending_.size());
    for (const auto& [uid, p] : pending_) seen.push_back(p.seen);
    std::nth_element(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(seen.size() / 2), seen.end());
    const Clock::time_point median = seen[seen.size() / 2];
    std::erase_if(pending_, [&](const auto& entry) { return entry.second.seen <= median; });
  }
  pending_.emplace(std::string(pod.uid), Pending{PendingPod::of(pod), now});
}

GroupBook::Admission PlacementLedger::admit(const PodRequest& pod, const GroupSpec& spec,
                                            const Policy& policy, const GroupBook::Candidates& candidates,
                                            const GroupBook::AnySent& any_sent) {
  std::lock_guard lock(mutex_);
  return groups_.admit(pod, spec, policy, candidates, any_sent);
}

std::vector<GroupBook::RoomWanted> PlacementLedger::groups_wanting_room() {
  std::lock_guard lock(mutex_);
  return groups_.groups_wanting_room();
}

bool PlacementLedger::hold_for_preemption(const std::string& group, const GroupPreemptionPlan& plan,
                                          const Policy& policy) {
  std::lock_guard lock(mutex_);
  return groups_.hold_for_preemption(group, plan, policy);
}

void PlacementLedger::victim_evicted() {
  std::lock_guard lock(mutex_);
  groups_.victim_evicted();
}

void PlacementLedger::preemption_failed(const std::string& group, const std::string& why) {
  std::lock_guard lock(mutex_);
  groups_.preemption_failed(group, why);
}

std::optional<PendingPod> PlacementLedger::take_pending(std::string_view uid) {
  std::lock_guard lock(mutex_);
  auto it = pending_.find(uid);
  if (it == pending_.end()) return std::nullopt;
  PendingPod pod = std::move(it->second.pod);
  pending_.erase(it);
  return pod;
}

void PlacementLedger::take_assumed(std::string_view uid, ClusterView::InFlightRelease& released) {
  auto it = assumed_.find(uid);
  if (it == assumed_.end()) return;
  released.emplace_back(it->second.node, it->second.requests);
  assumed_.erase(it);
}

void PlacementLedger::forget_assumed(std::string_view uid) {
  auto it = assumed_.find(uid);
  if (it == assumed_.end()) return;
  view_->count_in_flight(ClusterView::Write{}, it->second.node, it->second.requests, false);
  assumed_.erase(it);
}

void PlacementLedger::reserve(const PendingPod& pod, const std::string& node, const ResourceAmounts& counted) {
  {
    std::lock_guard lock(mutex_);
    reserve_locked(pod, node, counted);
  }
  bind_arrived_.notify_all();
}

bool PlacementLedger::reserve_shared_gpu(const PendingPod& pod, const std::string& node, const SharedGpuPick& pick) {
  bool picked = false;
  {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<const CachedNode>> found;
    const std::string_view name = node;
    view_->find_nodes({&name, 1}, found);
    const std::optional<ResourceAmounts> counted = pick(found.empty() ? nullptr : found[0], view_->used_on(node));
    if (counted) reserve_locked(pod, node, *counted);
    picked = counted.has_value();
  }
  if (picked) bind_arrived_.notify_all();
  return picked;
}

void PlacementLedger::reserve_locked(const PendingPod& pod, const std::string& node, const ResourceAmounts& counted) {
  // The watch was faster: already counted. (The watch applies pods to the view through the ledger,
  // under its lock: either the view has it now, or its event comes after this and releases it.)
  if (!view_->has_pod(pod.uid)) {
    forget_assumed(pod.uid);
    assumed_[pod.uid] = Assumed{node, counted, Clock::now() + options_.assume_ttl};
    view_->count_in_flight(ClusterView::Write{}, node, counted, true);
  }
  groups_.reserve(pod, node);
  expected_binds_->arrived(pod.uid);  // the verbs waiting for this bind see the pod counted
}

GroupBook::Gate PlacementLedger::wait_at_gate(const PendingPod& pod) {
  std::unique_lock lock(mutex_);
  GroupBook::Gate gate = groups_.wait_at_gate(pod, lock);
  // Refused at the gate: its slot is held again (by the book), and the pod no longer counts, in the
  // same step, so that no /filter sees both or neither.
  if (!gate.ok) forget_assumed(pod.uid);
  return gate;
}

void PlacementLedger::commit(const PendingPod& pod) {
  std::lock_guard lock(mutex_);
  groups_.commit(pod);
}

void PlacementLedger::roll_back(const PendingPod& pod) {
  std::lock_guard lock(mutex_);
  groups_.roll_back(pod);
  forget_assumed(pod.uid);
}

void PlacementLedger::observe_pod(const PodRequest& pod) {
  std::lock_guard lock(mutex_);
  ClusterView::InFlightRelease released;
  // The watch has its own word on this pod once it shows it bound (or finished). An event of the pod
  // still unbound (the device annotations /bind writes just before the Binding, a status update)
  // leaves the assumption: the bind is still on its way.
  if (!pod.node_name.empty() || pod.terminated()) take_assumed(pod.uid, released);
  view_->upsert_pod(ClusterView::Write{}, pod, released);
}

void PlacementLedger::observe_pod_deleted(std::string_view uid) {
  std::lock_guard lock(mutex_);
  ClusterView::InFlightRelease released;
  take_assumed(uid, released);
  view_->delete_pod(ClusterView::Write{}, uid, released);
}

// The sync marks and the heartbeat: the view's own, made with the ledger's Write (no ledger lock).
void PlacementLedger::observe_pods_synced() { view_->mark_pods_synced(ClusterView::Write{}); }
void PlacementLedger::observe_nodes_synced() { view_->mark_nodes_synced(ClusterView::Write{}); }
void PlacementLedger::observe_heard() { view_->touch(ClusterView::Write{}); }

void PlacementLedger::observe_relist(const std::vector<ClusterView::BoundPod>& pods) {
  std::unordered_set<std::string_view> listed;
  listed.reserve(pods.size());
  for (const auto& pod : pods) listed.insert(pod.uid);
  std::lock_guard lock(mutex_);
  // Assumed pods stay counted (the list may predate their binding), unless the list has them now.
  ClusterView::InFlightRelease released;
  for (auto it = assumed_.begin(); it != assumed_.end();) {
    auto next = std::next(it);
    if (listed.count(it->first)) take_assumed(it->first, released);
    it = next;
  }
  view_->replace_pods(ClusterView::Write{}, pods, released);
}

void PlacementLedger::hold_assumed_until(Clock::time_point until) {
  std::lock_guard lock(mutex_);
  for (auto& [uid, assumed] : assumed_) assumed.expires = std::max(assumed.expires, until);
}

PlacementLedger::Expired PlacementLedger::expire(Clock::time_point now) {
  Expired out;
  std::lock_guard lock(mutex_);
  for (auto it = assumed_.begin(); it != assumed_.end();) {
    auto next = std::next(it);
    if (it->second.expires <= now) {
      forget_assumed(it->first);
      ++out.assumed;
    }
    it = next;
  }
  out.pending = std::erase_if(pending_, [&](const auto& e) { return now - e.second.seen > options_.pending_ttl; });
  out.groups = groups_.expire(now);
  return out;
}

std::optional<std::pair<std::string, ResourceAmounts>> PlacementLedger::pod_usage(std::string_view uid) const {
  if (auto bound = view_->pod_usage(uid)) return bound;
  std::lock_guard lock(mutex_);
  if (auto it = assumed_.find(uid); it != assumed_.end()) return std::make_pair(it->second.node, it->second.requests);
  return std::nullopt;
}

int64_t PlacementLedger::smallest_pending_shared_gpu_memory() const {
  int64_t smallest = 0;
  std::lock_guard lock(mutex_);
  for (const auto& [uid, pending] : pending_) {
    const ResourceAmounts& r = pending.pod.requests;
    if (!r.has(ViewSchema::kSharedGpuMemory) || r.get(ViewSchema::kSharedGpuMemory) <= 0) continue;
    const int64_t units = milli_to_units_ceil(r.get(ViewSchema::kSharedGpuMemory));
    if (smallest == 0 || units < smallest) smallest = units;
  }
  return smallest;
}

PlacementLedger::Stats PlacementLedger::stats() const {
  std::lock_guard lock(mutex_);
  return Stats{assumed_.size(), pending_.size(), groups_.stats()};
}

std::optional<GroupBook::Report> PlacementLedger::group_report(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return groups_.report(key);
}

void PlacementLedger::on_group_placed(std::function<void(double)> observer) {
  std::lock_guard lock(mutex_);
  groups_.on_placed(std::move(observer));
}

}  // namespace gpu_extender
