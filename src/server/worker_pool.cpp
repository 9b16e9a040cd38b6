#include "worker_pool.h"

namespace gpu_extender {

WorkerPool::WorkerPool(size_t threads) {
  for (size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      while (true) {
        std::function<void()> task;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
          if (queue_.empty()) return;  // stopping, and nothing left to finish
          task = std::move(queue_.front());
          queue_.pop_front();
          --waiting_;
        }
        ++busy_;
        task();
        --busy_;
      }
    });
  }
}

WorkerPool::~WorkerPool() { shutdown(); }

void WorkerPool::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    ++waiting_;
  }
  ready_.notify_one();
}

void WorkerPool::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace gpu_extender
