#include "deletion_cost_keeper.h"
#include "common/thread_name.h"

#include <spdlog/spdlog.h>

namespace gpu_extender::kube {

DeletionCostKeeper::DeletionCostKeeper(std::shared_ptr<const ClusterView> view, std::shared_ptr<Binder> binder,
                                       std::shared_ptr<const PolicyHolder> policies,
                                       std::function<bool()> leader, DeletionCostOptions options)
    : view_(std::move(view)),
      binder_(std::move(binder)),
      policies_(std::move(policies)),
      leader_(std::move(leader)),
      options_(std::move(options)),
      limiter_(options_.qps, options_.qps) {}

DeletionCostKeeper::~DeletionCostKeeper() { stop(); }

void DeletionCostKeeper::start() {
  thread_ = std::thread([this] {
    name_this_thread("deletion-costs");
    run();
  });
}

void DeletionCostKeeper::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

DeletionCostKeeper::Stats DeletionCostKeeper::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void DeletionCostKeeper::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    if (leader_() && view_->ready()) pass();
    lock.lock();
    wake_.wait_for(lock, options_.period, [this] { return stopping_; });
  }
}

bool DeletionCostKeeper::wait_for_token() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!leader_()) return false;
    RateLimiter::Clock::duration wait{};
    if (limiter_.try_take(RateLimiter::Clock::now(), wait)) return true;
    wake_.wait_for(lock, wait, [this] { return stopping_; });
  }
  return false;
}

void DeletionCostKeeper::pass() {
  const auto policy = policies_->current();
  const PolicyConfig& config = policy->config();
  struct Job {
    std::string ns, name, uid;
    int64_t cost;
  };
  std::vector<Job> jobs;
  Stats seen;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // What is remembered of earlier patches is kept only for pods still waiting for their cost to show.
    std::unordered_map<std::string, Attempt> kept;
    view_->visit_costed_pods([&](const CostedPod& pod, const NodeView& node, const ResourceAmounts& used) {
      if (!keeps_cost_of(pod, options_.scheduler_names)) return;
      const auto decision = decide_deletion_cost(pod, node, used, config);
      if (!decision) return;
      if (decision->action == CostAction::kUserOwned) {
        ++seen.user_owned;
        return;
      }
      ++seen.pods_by_bucket[decision->desired.bucket];
      if (decision->action == CostAction::kUpToDate) return;  // the watch shows it: nothing to remember
      auto it = attempts_.find(pod.uid);
      if (it != attempts_.end()) kept.insert(*it);
      // Written already and the watch has not shown it yet; or failed and not yet due again.
      if (it != attempts_.end() && it->second.cost == decision->desired.cost &&
          (it->second.ok || now < it->second.retry_at))
        return;
      jobs.push_back({pod.ns, pod.name, pod.uid, decision->desired.cost});
    });
    attempts_ = std::move(kept);
    stats_.pods_by_bucket = seen.pods_by_bucket;
    stats_.user_owned = seen.user_owned;
  }
  const ViewSchema& schema = config.schema;
  for (const Job& job : jobs) {
    if (!wait_for_token()) return;  // stopping, or the lease is lost: not one patch more
    const std::string value = std::to_string(job.cost);
    const Status written = binder_->annotate(
        job.ns, job.name, job.uid,
        {{schema.pod_deletion_cost_annotation, value}, {schema.pod_deletion_cost_written_annotation, value}});
    std::lock_guard<std::mutex> lock(mutex_);
    Attempt& a = attempts_[job.uid];
    const bool same = a.cost == job.cost;
    a.cost = job.cost;
    a.ok = written.ok();
    if (a.ok) {
      ++stats_.written;
      a.backoff = std::chrono::milliseconds(0);
    } else {
      ++stats_.failed;
      a.backoff = same && a.backoff.count() ? std::min(a.backoff * 2, std::chrono::milliseconds(60000))
                                            : std::chrono::milliseconds(1000);
      a.retry_at = std::chrono::steady_clock::now() + a.backoff;
      spdlog::warn("deletion cost of pod {}/{} not written (retry in {} ms): {}", job.ns, job.name, a.backoff.count(),
                   written.why());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.passes;  // a whole pass: every pod looked at, every patch it needed tried
}

}  // namespace gpu_extender::kube
