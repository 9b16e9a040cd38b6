#pragma once
// The HTTP server's workers: a fixed number of threads and a queue of accepted connections waiting for
// one, whose length is visible so that the server can shed load instead of queueing without bound.
//
// cpp-httplib 0.11 gives a task queue no way to refuse a connection (enqueue returns nothing), so the
// queue takes every connection and the server answers 503 with Retry-After when, on reaching a worker,
// a request finds more than the allowed number still waiting (see HttpService). Thread-safe.
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpu_extender {

class WorkerPool final : public httplib::TaskQueue {
 public:
  explicit WorkerPool(size_t threads);
  ~WorkerPool() override;
  void enqueue(std::function<void()> task) override;
  void shutdown() override;
  size_t waiting() const { return waiting_.load(); }
  size_t busy() const { return busy_.load(); }

 private:
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> queue_;
  std::mutex mutex_;
  std::condition_variable ready_;
  bool stopping_ = false;
  std::atomic<size_t> waiting_{0}, busy_{0};
};

}  // namespace gpu_extender
