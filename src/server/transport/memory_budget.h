#pragma once
// A budget for the memory that request bodies make the server use, so that concurrent large
// requests wait their turn instead of getting the pod OOM-killed.
//
// A body costs more than its bytes: the parser's structural indexes (up to 4 bytes a byte for a body
// dense with small values), its string buffer, the answer, per-node state. Measured peaks: a
// realistic 54 MB 5,000-node body 1.9x, a 89 MB body of small numbers 6.0x. Each request is charged
// kBytesPerBodyByte per body byte before the body is read (its Content-Length) and as it grows
// (chunked, gzip); a charge that does not fit waits for others to finish, up to a time limit.
//
// Thread-safe.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace gpu_extender {

class MemoryBudget {
 public:
  static constexpr size_t kBytesPerBodyByte = 6;

  explicit MemoryBudget(size_t total_bytes) : total_(total_bytes) {}

  // One request's charge; given back when destroyed.
  class Lease {
   public:
    explicit Lease(MemoryBudget& budget) : budget_(&budget) {}
    ~Lease() { budget_->give_back(charged_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // Charges for a body of `body_bytes` in all (no-op when already charged that much). False when
    // the budget could not make room by `deadline`: the request must be refused.
    bool cover(size_t body_bytes, std::chrono::steady_clock::time_point deadline);
    size_t charged() const { return charged_; }

   private:
    MemoryBudget* budget_;
    size_t charged_ = 0;
  };

  size_t total() const { return total_; }
  size_t in_use() const;
  size_t waits() const;     // charges that had to wait (for the metrics)
  size_t refusals() const;  // charges that found no room in time

 private:
  bool take(size_t bytes, std::chrono::steady_clock::time_point deadline);
  void give_back(size_t bytes);

  const size_t total_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  size_t in_use_ = 0;
  size_t waits_ = 0;
  size_t refusals_ = 0;
};

}  // namespace gpu_extender
