#pragma once
// The placement ledger's record of the binds it expects (placement_ledger.h: the ledger owns it and
// guards it with its lock; nothing here is thread-safe on its own).
//
// kube-scheduler binds asynchronously: it assumes pod i in its own cache, starts pod i's binding
// cycle in a goroutine, and at once runs pod i+1's scheduling cycle. Pod i+1's /filter and
// /prioritize can therefore reach the extender before pod i's /bind does, and would be scored on
// usage that lacks pod i: equal scores for two empty nodes, the scheduler breaks the tie at random,
// and a burst of packed pods splits. So after a pod passes /filter or is scored, its /bind is
// expected (for at most the verbs' bind wait); a verb that must see it waits until every other pod's
// expected bind has arrived, which the ledger says in the same step as it counts the pod on its node.
//
// A bind that does not come in time (the pod failed Reserve or Permit, another extender refused it)
// stops being expected. If the scheduler never sends /bind here at all (bindVerb not configured),
// waiting is switched off after a few such timeouts, until a /bind arrives.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gpu_extender/state/placement_ledger.h"  // BindWaitStats
#include "gpu_extender/usage/usage_source.h"     // StringHash

namespace gpu_extender {

class BindExpectations {
 public:
  using Clock = std::chrono::steady_clock;

  // Pod `uid`'s /bind is expected by `deadline`.
  void expect(std::string_view uid, Clock::time_point deadline);
  // Pod `uid`'s /bind arrived (or was answered): waiters may go on. True when it was expected.
  bool arrived(std::string_view uid);
  // The earliest deadline of a bind expected for a pod other than `uid` (max() when none), after
  // dropping those past `now`.
  Clock::time_point next_deadline_of_others(std::string_view uid, Clock::time_point now);
  bool empty() const { return expected_.empty(); }
  // Whether expecting binds makes sense: false after a few timeouts with no /bind ever seen.
  bool enabled() const;
  void waited(std::chrono::nanoseconds took);
  BindWaitStats stats() const;

 private:
  void expire(Clock::time_point now);  // drops expectations past their deadline, counted as timeouts

  std::unordered_map<std::string, Clock::time_point, StringHash, std::equal_to<>> expected_;  // uid -> deadline
  bool binds_seen_ = false;
  uint64_t timeouts_before_any_bind_ = 0;
  BindWaitStats stats_;
};

}  // namespace gpu_extender
