#pragma once
// Reloads the policy file when it changes. A ConfigMap mounted in a pod changes by an atomic symlink
// swap, so the watcher compares the file's content, not its inode or time. A new policy is validated
// (parsed and built) before it is swapped in for new requests; an invalid one leaves the running
// policy in place, with an error log and gpu_extender_config_reloads_total{result="failure"}.
//
// Thread-safe: one thread of its own; stop() from any thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gpu_extender/policy/policy_holder.h"
#include "server/observability/metrics.h"

namespace gpu_extender {

class PolicyWatcher {
 public:
  PolicyWatcher(std::string path, std::shared_ptr<PolicyHolder> policies, std::shared_ptr<Metrics> metrics,
                std::chrono::milliseconds interval);
  ~PolicyWatcher();
  // Checks once now: true when a new policy was swapped in.
  bool check();

 private:
  std::string path_;
  std::shared_ptr<PolicyHolder> policies_;
  std::shared_ptr<Metrics> metrics_;
  std::chrono::milliseconds interval_;
  std::string last_text_;
  bool stopping_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace gpu_extender
