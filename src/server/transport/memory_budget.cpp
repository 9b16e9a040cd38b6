#include "server/transport/memory_budget.h"

#include <algorithm>

namespace gpu_extender {

bool MemoryBudget::Lease::cover(size_t body_bytes, std::chrono::steady_clock::time_point deadline) {
  // Saturating: a declared length near SIZE_MAX must not wrap into a small charge.
  const size_t wanted = body_bytes > budget_->total_ / kBytesPerBodyByte ? budget_->total_ + 1 : body_bytes * kBytesPerBodyByte;
  if (wanted <= charged_) return true;
  if (!budget_->take(wanted - charged_, deadline)) return false;
  charged_ = wanted;
  return true;
}

bool MemoryBudget::take(size_t bytes, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (bytes > total_) {  // could never fit, however long it waited
    ++refusals_;
    return false;
  }
  if (in_use_ + bytes > total_) {
    ++waits_;
    if (!freed_.wait_until(lock, deadline, [&] { return in_use_ + bytes <= total_; })) {
      ++refusals_;
      return false;
    }
  }
  in_use_ += bytes;
  return true;
}

void MemoryBudget::give_back(size_t bytes) {
  if (bytes == 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_use_ -= std::min(bytes, in_use_);
  }
  freed_.notify_all();
}

size_t MemoryBudget::in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}

size_t MemoryBudget::refusals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refusals_;
}

size_t MemoryBudget::waits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waits_;
}

}  // namespace gpu_extender
