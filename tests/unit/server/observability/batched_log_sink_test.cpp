#include "server/observability/batched_log_sink.h"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <spdlog/logger.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "test_support.h"

namespace {

using gpu_extender::BatchedLogSink;
using namespace std::chrono_literals;

// A pipe whose read end does not block: what the sink has written so far.
struct Pipe {
  int read_end = -1, write_end = -1;
  Pipe() {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    read_end = fds[0];
    write_end = fds[1];
    fcntl(read_end, F_SETFL, O_NONBLOCK);
  }
  ~Pipe() {
    close(read_end);
    close(write_end);
  }
  std::string drain() const {
    std::string out;
    char buf[4096];
    ssize_t n = 0;
    while ((n = read(read_end, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }
};

std::shared_ptr<spdlog::logger> logger_on(const std::shared_ptr<BatchedLogSink>& sink) {
  auto logger = std::make_shared<spdlog::logger>("batched-test", sink);
  logger->set_pattern("%l %v");
  logger->set_level(spdlog::level::trace);
  return logger;
}

}  // namespace

TEST_CASE("batched log sink: info lines wait for their batch, then all are written in order") {
  Pipe pipe;
  auto sink = std::make_shared<BatchedLogSink>(pipe.write_end, 10min, size_t{1} << 20);
  auto logger = logger_on(sink);
  for (int i = 0; i < 100; ++i) logger->info("line {}", i);
  // A fixed wait, on purpose: what is checked is a write that does NOT happen, and that has no event to
  // wait for. The writer wakes at a batch's first line; 50 ms is far longer than it takes to write, so a
  // sink that wrote each line at once (or the batch's start) would have written by then.
  std::this_thread::sleep_for(50ms);
  CHECK(pipe.drain().empty());  // the batch lasts ten minutes: nothing written yet
  sink->flush();
  std::string expected;
  for (int i = 0; i < 100; ++i) expected += "info line " + std::to_string(i) + "\n";
  CHECK(pipe.drain() == expected);
}

TEST_CASE("batched log sink: a warning is written at once, with the lines before it") {
  Pipe pipe;
  auto sink = std::make_shared<BatchedLogSink>(pipe.write_end, 10min, size_t{1} << 20);
  auto logger = logger_on(sink);
  logger->info("before");
  logger->warn("trouble");
  std::string text;
  CHECK(test_support::eventually([&] {
    text += pipe.drain();
    return text.find("trouble") != std::string::npos;
  }, 10s));  // the batch lasts ten minutes: only the warning can have it written
  CHECK(text == "info before\nwarning trouble\n");
}

TEST_CASE("batched log sink: a short batch is written without a flush") {
  Pipe pipe;
  auto sink = std::make_shared<BatchedLogSink>(pipe.write_end, 5ms, size_t{1} << 20);
  auto logger = logger_on(sink);
  logger->info("soon");
  std::string text;
  CHECK(test_support::eventually([&] {
    text += pipe.drain();
    return !text.empty();
  }, 10s));
  CHECK(text == "info soon\n");
}

TEST_CASE("batched log sink: the sink's end writes what it holds, and a full buffer holds loggers back") {
  Pipe pipe;
  {
    // 64 bytes held at most: the 200 lines below pass through many batches, none lost.
    auto sink = std::make_shared<BatchedLogSink>(pipe.write_end, 1ms, 64);
    auto logger = logger_on(sink);
    for (int i = 0; i < 200; ++i) logger->info("n{}", i);
  }
  std::string expected;
  for (int i = 0; i < 200; ++i) expected += "info n" + std::to_string(i) + "\n";
  CHECK(pipe.drain() == expected);
}
