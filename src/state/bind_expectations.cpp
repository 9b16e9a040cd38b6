// BindExpectations: see bind_expectations.h.
#include "state/bind_expectations.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gpu_extender {
namespace {
// Timeouts with no /bind ever seen after which waiting stops: the scheduler does not bind here.
constexpr uint64_t kTimeoutsBeforeGivingUp = 3;
// A flood of distinct pods that never bind must not grow the table without bound.
constexpr size_t kMaxExpected = 1024;
}  // namespace

bool BindExpectations::enabled() const { return binds_seen_ || timeouts_before_any_bind_ < kTimeoutsBeforeGivingUp; }

void BindExpectations::expect(std::string_view uid, Clock::time_point deadline) {
  if (uid.empty() || !enabled()) return;
  if (expected_.size() >= kMaxExpected) expire(Clock::now());
  if (expected_.size() >= kMaxExpected) return;
  expected_[std::string(uid)] = deadline;
}

bool BindExpectations::arrived(std::string_view uid) {
  if (!binds_seen_ && timeouts_before_any_bind_ >= kTimeoutsBeforeGivingUp)
    spdlog::info("bind wait: /bind requests arrive; /filter and /prioritize wait for pending binds again");
  binds_seen_ = true;
  auto it = expected_.find(uid);
  if (it == expected_.end()) return false;
  expected_.erase(it);
  return true;
}

void BindExpectations::expire(Clock::time_point now) {
  for (auto it = expected_.begin(); it != expected_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    it = expected_.erase(it);
    ++stats_.timeouts;
    if (!binds_seen_ && ++timeouts_before_any_bind_ == kTimeoutsBeforeGivingUp)
      spdlog::info("bind wait: {} scored pods were never bound through this extender (no bindVerb?); "
                   "/filter and /prioritize no longer wait for binds",
                   kTimeoutsBeforeGivingUp);
  }
}

BindExpectations::Clock::time_point BindExpectations::next_deadline_of_others(std::string_view uid,
                                                                              Clock::time_point now) {
  expire(now);
  Clock::time_point until = Clock::time_point::max();
  for (const auto& [other, deadline] : expected_)
    if (other != uid) until = std::min(until, deadline);
  return until;
}

void BindExpectations::waited(std::chrono::nanoseconds took) {
  ++stats_.waits;
  stats_.waited_seconds += std::chrono::duration<double>(took).count();
}

BindWaitStats BindExpectations::stats() const {
  BindWaitStats s = stats_;
  s.enabled = enabled();
  return s;
}

}  // namespace gpu_extender
