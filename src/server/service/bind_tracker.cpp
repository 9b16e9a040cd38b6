#include "server/service/bind_tracker.h"

#include <spdlog/spdlog.h>

namespace gpu_extender {
namespace {
// Timeouts with no /bind ever seen after which waiting stops: the scheduler does not bind here.
constexpr uint64_t kTimeoutsBeforeGivingUp = 3;
// A flood of distinct pods that never bind must not grow the table without bound.
constexpr size_t kMaxExpected = 1024;
}  // namespace

bool BindTracker::enabled() const {
  return max_wait_.count() > 0 && (binds_seen_ || timeouts_before_any_bind_ < kTimeoutsBeforeGivingUp);
}

void BindTracker::expect_bind(std::string_view uid) {
  if (uid.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled()) return;
  if (expected_.size() >= kMaxExpected) expire(Clock::now());
  if (expected_.size() >= kMaxExpected) return;
  expected_[std::string(uid)] = Clock::now() + max_wait_;
}

void BindTracker::bind_arrived(std::string_view uid) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!binds_seen_ && timeouts_before_any_bind_ >= kTimeoutsBeforeGivingUp)
      spdlog::info("bind tracker: /bind requests arrive; /filter and /prioritize wait for pending binds again");
    binds_seen_ = true;
    auto it = expected_.find(uid);
    if (it == expected_.end()) return;
    expected_.erase(it);
  }
  arrived_.notify_all();
}

void BindTracker::expire(Clock::time_point now) {
  for (auto it = expected_.begin(); it != expected_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    it = expected_.erase(it);
    ++stats_.timeouts;
    if (!binds_seen_ && ++timeouts_before_any_bind_ == kTimeoutsBeforeGivingUp)
      spdlog::info("bind tracker: {} scored pods were never bound through this extender (no bindVerb?); "
                   "/filter and /prioritize no longer wait for binds",
                   kTimeoutsBeforeGivingUp);
  }
}

std::chrono::nanoseconds BindTracker::wait_for_others(std::string_view uid) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (expected_.empty()) return {};
  const auto started = Clock::now();
  bool waited = false;
  while (true) {
    const auto now = Clock::now();
    expire(now);
    Clock::time_point until = Clock::time_point::max();
    for (const auto& [other, deadline] : expected_)
      if (other != uid) until = std::min(until, deadline);
    if (until == Clock::time_point::max()) break;  // nothing expected but this pod's own bind
    waited = true;
    arrived_.wait_until(lock, until);
  }
  const auto took = Clock::now() - started;
  if (waited) {
    ++stats_.waits;
    stats_.waited_seconds += std::chrono::duration<double>(took).count();
  }
  return took;
}

BindTracker::Stats BindTracker::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  s.enabled = enabled();
  return s;
}

}  // namespace gpu_extender
