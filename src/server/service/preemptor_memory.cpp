// Pods with a preemption under way: see preemptor_memory.h.
#include "server/service/preemptor_memory.h"

namespace gpu_extender {

void PreemptorMemory::remember(std::string_view uid, Clock::time_point now) {
  if (uid.empty()) return;
  std::lock_guard lock(mutex_);
  auto [at, added] = since_.insert_or_assign(std::string(uid), now);
  if (added) order_.push_back(at->first);
  while (order_.size() > kMaxPods) {
    since_.erase(order_.front());
    order_.pop_front();
  }
}

bool PreemptorMemory::preempting(std::string_view uid, Clock::time_point now) const {
  if (uid.empty()) return false;
  std::lock_guard lock(mutex_);
  auto at = since_.find(uid);
  return at != since_.end() && now - at->second < kRemembered;
}

}  // namespace gpu_extender
