#include "group_preemptor.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/thread_name.h"

namespace gpu_extender::kube {
namespace {
// Plans made again after dry runs took victims out (a budget refused, the pod gone), before giving up
// until the next look.
constexpr int kMaxReplans = 4;

std::string pod_name(const PreemptionVictim& v) { return v.ns + "/" + v.name; }
}  // namespace

GroupPreemptor::GroupPreemptor(std::shared_ptr<PlacementLedger> ledger, std::shared_ptr<Evictor> evictor,
                               std::shared_ptr<const PolicyHolder> policies, std::function<bool()> leader,
                               std::chrono::milliseconds period)
    : ledger_(std::move(ledger)),
      evictor_(std::move(evictor)),
      policies_(std::move(policies)),
      leader_(std::move(leader)),
      period_(period) {}

GroupPreemptor::~GroupPreemptor() { stop(); }

void GroupPreemptor::start() {
  thread_ = std::thread([this] {
    name_this_thread("group-preempt");
    run();
  });
}

void GroupPreemptor::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GroupPreemptor::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    if (leader_() && ledger_->view()->ready()) pass();
    lock.lock();
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

bool GroupPreemptor::stopping() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopping_;
}

void GroupPreemptor::pass() {
  const std::shared_ptr<const Policy> policy = policies_->current();
  for (const GroupBook::RoomWanted& wanted : ledger_->groups_wanting_room()) make_room(wanted, *policy);
}

void GroupPreemptor::make_room(const GroupBook::RoomWanted& wanted, const Policy& policy) {
  const std::string& key = wanted.spec.key;
  ClusterView::PreemptionSnapshot snapshot = ledger_->view()->preemption_snapshot();
  const std::vector<NodeInput> nodes = snapshot.inputs();
  GroupPreemptionRequest request;
  request.policy = &policy;
  request.spec = &wanted.spec;
  request.member = &wanted.member;
  request.priority = wanted.priority;
  request.needed = wanted.needed;
  request.nodes = nodes;
  request.pods = snapshot.pods;
  request.bound_nodes = wanted.bound_nodes;
  request.avoid = wanted.avoid;
  GroupPreemptionPlan plan;
  for (int attempt = 0;; ++attempt) {
    plan = plan_group_preemption(request);
    if (!plan.chosen) {
      ledger_->preemption_failed(key, plan.reason);
      spdlog::info("group {}: no room can be made: {}", key, plan.reason);
      return;
    }
    // Dry runs first: the API server says which evictions its budgets would refuse, before any is made.
    bool changed = false;
    for (const PreemptionVictim& v : plan.victims) {
      if (stopping()) return;
      const Evictor::Result r = evictor_->evict(v, true);
      if (r.outcome == Evictor::Outcome::kEvicted) continue;
      if (r.outcome == Evictor::Outcome::kFailed) {
        ledger_->preemption_failed(key, "cannot evict " + pod_name(v) + ": " + r.why);
        spdlog::warn("group {}: cannot evict pod {} (dry run): {}", key, pod_name(v), r.why);
        return;
      }
      auto pod = std::find_if(snapshot.pods.begin(), snapshot.pods.end(),
                              [&](const PreemptionVictim& p) { return p.uid == v.uid; });
      if (pod == snapshot.pods.end()) continue;
      if (r.outcome == Evictor::Outcome::kBudgetRefused) pod->budget_refused = true;
      else pod->terminating = true;  // gone: its room is free, with no eviction
      changed = true;
    }
    if (!changed) break;
    if (attempt + 1 >= kMaxReplans) {
      ledger_->preemption_failed(key, "the plans kept changing under dry runs of their evictions");
      return;
    }
  }
  if (!ledger_->hold_for_preemption(key, plan, policy)) return;  // placed, planned, gone, or the room taken meanwhile
  if (plan.victims.empty()) {
    spdlog::info("group {}: room found in {} without evicting anything", key, plan.domain);
    return;
  }
  spdlog::info("group {} (priority {}): evicting {} pod(s) of lower priority to make room in {}", key,
               wanted.priority, plan.victims.size(), plan.domain);
  const std::string message = "Preempted by pod group " + key + " (priority " + std::to_string(wanted.priority) +
                              ") to place it whole in " + (plan.domain.empty() ? "the cluster" : plan.domain) +
                              " (gpu-extender group preemption)";
  for (const PreemptionVictim& v : plan.victims) {
    if (stopping() || !leader_()) {  // the rest would be evicted by a replica that no longer decides
      ledger_->preemption_failed(key, "this replica stopped, or lost the lease, while evicting");
      return;
    }
    const Evictor::Result r = evictor_->evict(v, false);
    if (r.outcome == Evictor::Outcome::kEvicted) {
      spdlog::info("group {}: evicted pod {} (priority {}) on {}", key, pod_name(v), v.priority, v.node);
      ledger_->victim_evicted();
      evictor_->record_preempted(v, message);
      continue;
    }
    if (r.outcome == Evictor::Outcome::kGone) continue;  // left already: its room is free
    // A budget that allowed the dry run refuses now (another eviction came first), or the API failed:
    // the room is given back rather than the group placed short of it.
    ledger_->preemption_failed(key, "the eviction of " + pod_name(v) + " was refused: " + r.why);
    return;
  }
}

}  // namespace gpu_extender::kube
