#include "server/observability/batched_log_sink.h"
#include "common/thread_name.h"

#include <spdlog/pattern_formatter.h>
#include <unistd.h>

#include <cerrno>

namespace gpu_extender {

BatchedLogSink::BatchedLogSink(int fd, std::chrono::milliseconds batch_for, size_t max_held)
    : fd_(fd), batch_for_(batch_for), max_held_(max_held), formatter_(std::make_unique<spdlog::pattern_formatter>()) {
  writer_ = std::thread([this] {
    name_this_thread("log-writer");
    run();
  });
}

BatchedLogSink::~BatchedLogSink() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_writer_.notify_one();
  writer_.join();  // the writer writes what is held before it ends
}

void BatchedLogSink::log(const spdlog::details::log_msg& msg) {
  if (!should_log(msg.level)) return;
  spdlog::memory_buf_t formatted;
  std::unique_lock<std::mutex> lock(mutex_);
  formatter_->format(msg, formatted);
  // Bounded: a writer that cannot keep up (nobody reading the pipe) holds the loggers back.
  written_.wait(lock, [this] { return held_.size() < max_held_ || stopping_; });
  // Only an idle writer needs waking for an info line: a writer between batches wakes by itself.
  const bool wake_idle_writer = writer_idle_ && held_.empty();
  held_.append(formatted.data(), formatted.size());
  ++appended_;
  const bool now = msg.level >= spdlog::level::warn;
  urgent_ = urgent_ || now;
  lock.unlock();
  if (wake_idle_writer || now) wake_writer_.notify_one();
}

void BatchedLogSink::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = appended_;
  if (written_upto_ >= target) return;
  urgent_ = true;
  wake_writer_.notify_one();
  written_.wait(lock, [&] { return written_upto_ >= target || stopping_; });
}

void BatchedLogSink::set_pattern(const std::string& pattern) {
  set_formatter(std::make_unique<spdlog::pattern_formatter>(pattern));
}

void BatchedLogSink::set_formatter(std::unique_ptr<spdlog::formatter> formatter) {
  std::lock_guard<std::mutex> lock(mutex_);
  formatter_ = std::move(formatter);
}

void BatchedLogSink::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (!urgent_ && !stopping_) {
      // Between batches of a burst the writer wakes by its own timer, once per batch_for_, and writes
      // what came meanwhile: request threads do not wake it (a futex wake-up each) for the first line
      // of every batch. Idle, without a timer, after a batch_for_ that brought nothing.
      wake_writer_.wait_for(lock, batch_for_, [this] { return urgent_ || stopping_; });
      if (held_.empty() && !stopping_) {
        writer_idle_ = true;
        wake_writer_.wait(lock, [this] { return !held_.empty() || stopping_; });
        writer_idle_ = false;
        // A batch: the lines that come within batch_for_ of its first (unless one must go now).
        wake_writer_.wait_for(lock, batch_for_, [this] { return urgent_ || stopping_; });
      }
    }
    if (held_.empty() && stopping_) return;
    std::string batch;
    batch.swap(held_);
    const uint64_t upto = appended_;
    urgent_ = false;
    lock.unlock();
    write_all(batch);
    lock.lock();
    written_upto_ = upto;
    written_.notify_all();
  }
}

void BatchedLogSink::write_all(const std::string& bytes) const {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stderr gone: nothing else to tell
    done += static_cast<size_t>(n);
  }
}

}  // namespace gpu_extender
