#pragma once
// The HTTP server's workers. cpp-httplib 0.11 serves a connection on one thread for its whole life
// (every request of a kept-alive connection, and the waits between them), so the pool is elastic: a
// core of threads always there, and one more thread (up to a maximum) whenever a connection arrives
// and none is idle. A /bind waiting on the API server, a kept-alive Prometheus scrape or an idle
// client then holds its own thread, never the one the next /filter needs. Threads beyond the core
// end after a minute idle.
//
// Past the maximum, connections queue; the queue's length is visible so that the server can shed
// load (503 with Retry-After, see HttpService): cpp-httplib gives a task queue no way to refuse a
// connection at accept time. Thread-safe.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace gpu_extender {

class WorkerPool final : public httplib::TaskQueue {
 public:
  WorkerPool(size_t core_threads, size_t max_threads,
             std::chrono::milliseconds spare_idle_timeout = std::chrono::seconds(60));
  ~WorkerPool() override;
  void enqueue(std::function<void()> task) override;
  void shutdown() override;
  size_t waiting() const { return waiting_.load(); }
  // When the task this thread runs was queued (a connection's accept time, give or take): how long it
  // has waited already, for slow-client shedding (ConnectionLimits::under_pressure).
  static std::chrono::steady_clock::time_point current_task_queued_at();
  size_t busy() const { return busy_.load(); }
  size_t threads() const { return live_.load(); }

 private:
  void spawn(bool core);  // with mutex_ held
  void run(bool core);
  void join_finished();   // with mutex_ held

  const size_t max_threads_;
  const std::chrono::milliseconds spare_idle_timeout_;
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> finished_;  // spare threads that ended; joined at the next enqueue
  struct Task {
    std::function<void()> run;
    std::chrono::steady_clock::time_point queued_at;
  };
  std::deque<Task> queue_;
  std::mutex mutex_;
  std::condition_variable ready_;
  bool stopping_ = false;
  size_t idle_ = 0;  // threads waiting for a task
  std::atomic<size_t> waiting_{0}, busy_{0}, live_{0};
};

}  // namespace gpu_extender
