#pragma once
// A token bucket: at most `qps` events a second on average, `burst` at once. The caller asks when its
// next event may happen and waits itself (so that it can stop waiting when it is told to stop).
// Thread-safe: one mutex; the clock is a parameter so tests can drive it.
#include <algorithm>
#include <chrono>
#include <mutex>

namespace gpu_extender {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  RateLimiter(double qps, double burst) : qps_(qps), burst_(std::max(1.0, burst)), tokens_(burst_) {}

  // Takes a token if one is there at `now` (true), else says how long until one is (false, `wait`).
  bool try_take(Clock::time_point now, Clock::duration& wait) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (last_ != Clock::time_point{})
      tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
    last_ = now;
    if (tokens_ >= 1.0) {
      tokens_ -= 1.0;
      return true;
    }
    wait = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>((1.0 - tokens_) / qps_));
    return false;
  }

 private:
  std::mutex mutex_;
  const double qps_, burst_;
  double tokens_;
  Clock::time_point last_{};
};

}  // namespace gpu_extender
