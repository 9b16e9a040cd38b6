#pragma once
// Keeps bursts scored on the placements the scheduler has just made.
//
// kube-scheduler binds asynchronously: it assumes pod i in its own cache, starts pod i's binding
// cycle in a goroutine, and at once runs pod i+1's scheduling cycle. Pod i+1's /filter and
// /prioritize can therefore reach the extender before pod i's /bind does, and would be scored on
// usage that lacks pod i: equal scores for two empty nodes, the scheduler breaks the tie at random,
// and a burst of packed pods splits. So after a pod passes /filter or is scored, its /bind is
// "expected"; /filter and /prioritize of any other pod wait (up to `max_wait`) until every expected
// bind has arrived. /bind counts its pod on the node before calling the API server and then marks
// the bind arrived, so the waiting request sees the pod counted.
//
// A bind that does not come within `max_wait` (the pod failed Reserve or Permit, another extender
// refused it) stops being expected. If the scheduler never sends /bind here at all (bindVerb not
// configured), waiting is switched off after a few such timeouts, until a /bind arrives.
//
// Thread-safe.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gpu_extender/server/extender_service.h"  // BindWaitStats
#include "gpu_extender/usage/usage_source.h"     // StringHash

namespace gpu_extender {

class BindTracker {
 public:
  using Clock = std::chrono::steady_clock;
  explicit BindTracker(std::chrono::milliseconds max_wait) : max_wait_(max_wait) {}

  // Pod `uid` passed /filter or was scored: its /bind is expected within max_wait from now.
  void expect_bind(std::string_view uid);
  // Pod `uid`'s /bind arrived (its pod is counted on its node): waiters may go on.
  void bind_arrived(std::string_view uid);
  // Before judging pod `uid`: waits until no other pod's bind is expected. Returns how long it waited.
  std::chrono::nanoseconds wait_for_others(std::string_view uid);

  using Stats = BindWaitStats;
  Stats stats() const;

 private:
  // Drops expectations past their deadline (with mutex_ held); counts them as timeouts.
  void expire(Clock::time_point now);
  bool enabled() const;  // with mutex_ held

  const std::chrono::milliseconds max_wait_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::unordered_map<std::string, Clock::time_point, StringHash, std::equal_to<>> expected_;  // uid -> deadline
  bool binds_seen_ = false;
  uint64_t timeouts_before_any_bind_ = 0;
  Stats stats_;
};

}  // namespace gpu_extender
