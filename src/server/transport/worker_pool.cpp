#include "server/transport/worker_pool.h"
#include "common/thread_name.h"

namespace gpu_extender {
namespace {
thread_local std::chrono::steady_clock::time_point task_queued_at{};
}  // namespace

std::chrono::steady_clock::time_point WorkerPool::current_task_queued_at() { return task_queued_at; }

WorkerPool::WorkerPool(size_t core_threads, size_t max_threads, std::chrono::milliseconds spare_idle_timeout)
    : max_threads_(std::max(core_threads, max_threads)), spare_idle_timeout_(spare_idle_timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < core_threads; ++i) spawn(true);
}

WorkerPool::~WorkerPool() { shutdown(); }

void WorkerPool::spawn(bool core) {
  ++live_;
  std::thread t([this, core] {
    name_this_thread("http-worker");
    run(core);
  });
  const std::thread::id id = t.get_id();
  threads_.emplace(id, std::move(t));
}

void WorkerPool::run(bool core) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    ++idle_;
    const auto has_work = [this] { return stopping_ || !queue_.empty(); };
    bool woke = true;
    if (core) ready_.wait(lock, has_work);
    else woke = ready_.wait_for(lock, spare_idle_timeout_, has_work);
    --idle_;
    if (queue_.empty() && (stopping_ || !woke)) break;  // stopping with nothing left, or a spare idle too long
    Task task = std::move(queue_.front());
    queue_.pop_front();
    --waiting_;
    ++busy_;
    lock.unlock();
    task_queued_at = task.queued_at;
    task.run();
    lock.lock();
    --busy_;
  }
  --live_;
  if (!stopping_) finished_.push_back(std::this_thread::get_id());
}

void WorkerPool::join_finished() {
  for (std::thread::id id : finished_) {
    auto it = threads_.find(id);
    if (it == threads_.end()) continue;
    it->second.join();  // it has left run(): at most the return is left
    threads_.erase(it);
  }
  finished_.clear();
}

void WorkerPool::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    join_finished();
    queue_.push_back({std::move(task), std::chrono::steady_clock::now()});
    ++waiting_;
    // Every queued connection should find an idle thread; grow while it would not.
    if (queue_.size() > idle_ && threads_.size() < max_threads_) spawn(false);
  }
  ready_.notify_one();
}

void WorkerPool::shutdown() {
  std::map<std::thread::id, std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    threads.swap(threads_);
    finished_.clear();
  }
  ready_.notify_all();
  for (auto& [id, t] : threads)
    if (t.joinable()) t.join();
}

}  // namespace gpu_extender
