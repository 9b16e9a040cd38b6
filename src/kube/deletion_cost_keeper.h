#pragma once
// Keeps controller.kubernetes.io/pod-deletion-cost on the pods this extender places (deletion_cost.h),
// from the cluster view it already watches: no list of its own. Every period, while this replica holds
// the lease, it decides each pod's cost and patches the pods whose bucket changed (cost and companion
// annotation in one merge patch, with the pod's UID as precondition), at most `qps` patches a second.
// A failed patch is retried with backoff (1 s doubling to 60 s). After a restart the watch shows the
// costs already written, so unchanged pods are not patched again. Losing the lease stops the next
// patch at once.
//
// Thread-safe: start() and stop() from one thread; stats() from any.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gpu_extender/kube/binder.h"
#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/policy/policy_holder.h"
#include "rate_limiter.h"

namespace gpu_extender::kube {

struct DeletionCostOptions {
  double qps = 5;
  std::chrono::milliseconds period{2000};
  std::vector<std::string> scheduler_names{"gpu-scheduler"};
};

class DeletionCostKeeper {
 public:
  DeletionCostKeeper(std::shared_ptr<const ClusterView> view, std::shared_ptr<Binder> binder,
                     std::shared_ptr<const PolicyHolder> policies, std::function<bool()> leader,
                     DeletionCostOptions options);
  ~DeletionCostKeeper();
  void start();
  void stop();

  struct Stats {
    uint64_t written = 0, failed = 0;
    uint64_t passes = 0;  // whole passes over the pods, as the leader
    std::map<int, size_t> pods_by_bucket;  // as of the last pass, the pods it keeps costs of
    size_t user_owned = 0;                 // pods whose cost someone else set: left alone
  };
  Stats stats() const;

 private:
  void run();
  void pass();
  // Waits for a token of the rate limit; false when stopping or no longer the leader.
  bool wait_for_token();

  std::shared_ptr<const ClusterView> view_;
  std::shared_ptr<Binder> binder_;
  std::shared_ptr<const PolicyHolder> policies_;
  std::function<bool()> leader_;
  DeletionCostOptions options_;
  RateLimiter limiter_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  Stats stats_;
  struct Attempt {
    int64_t cost = 0;  // the cost last written (success) or tried (failure)
    bool ok = false;
    std::chrono::steady_clock::time_point retry_at{};
    std::chrono::milliseconds backoff{0};
  };
  std::unordered_map<std::string, Attempt> attempts_;  // by pod UID, until the watch shows the cost
};

}  // namespace gpu_extender::kube
