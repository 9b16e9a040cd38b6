#pragma once
// The pods a /preempt answer has just kept candidates for, so that their next /filter waits longer for
// the watch to see the victims go.
//
// kube-scheduler deletes the victims of a preemption and retries the preemptor within milliseconds
// (1.33+ pops the backoff queue when the active one is empty). The extender's watch may have applied
// only some of the deletions by then; /filter's catch-up (ClusterView::catch_up) waits --view-catch-up-ms
// for more, which a loaded machine can outlast. Refused then, the preemptor finds no victims left to
// preempt and waits for the next cluster event: minutes on a quiet cluster. A pod remembered here has
// victims on their way out, so its /filter may wait up to kCatchUp for them, and only it.
//
// Bounded (kMaxPods, the oldest forgotten first) and forgetful (kRemembered). Thread-safe.
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gpu_extender/usage/usage_source.h"  // StringHash

namespace gpu_extender {

class PreemptorMemory {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kCatchUp{1000};
  static constexpr std::chrono::seconds kRemembered{30};
  static constexpr size_t kMaxPods = 4096;

  // /preempt kept candidates for pod `uid` at `now`.
  void remember(std::string_view uid, Clock::time_point now = Clock::now());
  // Whether pod `uid` was remembered less than kRemembered before `now`.
  bool preempting(std::string_view uid, Clock::time_point now = Clock::now()) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Clock::time_point, StringHash, std::equal_to<>> since_;
  std::deque<std::string> order_;  // oldest first, for the bound
};

}  // namespace gpu_extender
