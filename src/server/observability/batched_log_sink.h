#pragma once
// A spdlog sink that writes its lines to a file descriptor in batches, from a thread of its own.
//
// Why: the request log writes a line per request, and stderr is unbuffered: one write() per line,
// each waking whoever reads the pipe (the container runtime). In a burst that was a tenth of the
// extender's CPU per placed pod. Here a line is formatted and appended to a buffer under a mutex; the
// writer thread wakes at the first line of a batch, waits `batch_for` for more, and writes them all
// at once; while lines keep coming it wakes by its own timer, once per `batch_for`, and is not woken
// by each batch's first line. Every line is kept, in order.
//
// When a line is written:
//  - info and below: within `batch_for` (50 ms in the service) of the first line of its batch;
//  - warn and above: at once (the writer is woken, and writes what came before it too);
//  - flush(), and the sink's destruction (the process exiting normally): everything held.
// A process killed outright loses at most the last `batch_for` of info lines.
// Memory is bounded: past `max_held` bytes, a logging thread waits for the writer (as a blocking
// write to a full pipe made it wait before).
#include <spdlog/sinks/sink.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace gpu_extender {

class BatchedLogSink final : public spdlog::sinks::sink {
 public:
  BatchedLogSink(int fd, std::chrono::milliseconds batch_for, size_t max_held);
  ~BatchedLogSink() override;
  BatchedLogSink(const BatchedLogSink&) = delete;
  BatchedLogSink& operator=(const BatchedLogSink&) = delete;

  void log(const spdlog::details::log_msg& msg) override;
  void flush() override;  // returns once what was held is written
  void set_pattern(const std::string& pattern) override;
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override;

 private:
  void run();
  void write_all(const std::string& bytes) const;

  const int fd_;
  const std::chrono::milliseconds batch_for_;
  const size_t max_held_;
  std::mutex mutex_;
  std::condition_variable wake_writer_, written_;
  std::unique_ptr<spdlog::formatter> formatter_;
  std::string held_;          // lines formatted and not written yet
  uint64_t appended_ = 0;      // lines taken into held_ so far ...
  uint64_t written_upto_ = 0;  // ... and how many of them are written
  bool urgent_ = false;       // a warning or a flush(): write without waiting for more
  bool stopping_ = false;
  bool writer_idle_ = false;  // the writer waits for a first line, without a timer: log() wakes it
  std::thread writer_;
};

}  // namespace gpu_extender
