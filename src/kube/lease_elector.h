#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it: acquire a
// lease nobody holds (or whose holder stopped renewing for lease_duration, measured on this clock
// from when the record last changed, so clocks need not agree), renew every retry_period, give up
// leadership at once when no renewal succeeded for renew_deadline, and release the lease on stop() so
// that another replica takes over without waiting for it to expire. Updates carry the Lease's
// resourceVersion: of two replicas racing, the API server lets one win (409 for the other).
//
// Thread-safe: leader() is read from any thread; start() and stop() from one.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gpu_extender/kube/api_client.h"

namespace gpu_extender::kube {

struct LeaseConfig {
  std::string ns, name;  // the Lease
  std::string identity;  // this replica: unique per process
  std::chrono::milliseconds lease_duration{15000}, renew_deadline{10000}, retry_period{2000};
};

class LeaseElector {
 public:
  // `on_change(true|false)` is called from the elector's thread when leadership is gained or lost.
  LeaseElector(std::shared_ptr<const ApiClient> api, LeaseConfig config, std::function<void(bool)> on_change = {});
  ~LeaseElector();

  void start();
  // Stops trying; a leader releases the lease (holder emptied) when `release`.
  void stop(bool release = true);
  bool leader() const { return leader_.load(); }
  const LeaseConfig& config() const { return config_; }

 private:
  void run();
  // One attempt to take or keep the lease: held by this replica afterwards, held by another (fresh),
  // or the API call failed (a conflict: someone else wrote it first; a transport error).
  enum class Attempt { kHeld, kHeldByOther, kFailed };
  Attempt try_acquire_or_renew();
  void release();
  void set_leader(bool leader);
  std::string lease_path(bool collection) const;

  std::shared_ptr<const ApiClient> api_;
  LeaseConfig config_;
  std::function<void(bool)> on_change_;
  std::atomic<bool> leader_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  // What this replica last saw of another holder's record, and when (on its own clock).
  std::string observed_holder_, observed_renew_;
  std::chrono::steady_clock::time_point observed_at_{};
};

}  // namespace gpu_extender::kube
