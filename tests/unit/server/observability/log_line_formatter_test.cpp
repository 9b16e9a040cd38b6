#include "server/observability/log_line_formatter.h"

#include <catch2/catch.hpp>
#include <spdlog/details/log_msg.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

using gpu_extender::LogFormat;
using gpu_extender::LogLineFormatter;

std::string formatted(spdlog::formatter& formatter, const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  return std::string(out.data(), out.size());
}

// Sets TZ for the test's duration (the offset part of the line), and back.
struct TimeZone {
  explicit TimeZone(const char* zone) {
    if (const char* was = std::getenv("TZ")) previous = was;
    setenv("TZ", zone, 1);
    tzset();
  }
  ~TimeZone() {
    if (previous.empty()) unsetenv("TZ");
    else setenv("TZ", previous.c_str(), 1);
    tzset();
  }
  std::string previous;
};

}  // namespace

TEST_CASE("log line formatter: writes what spdlog's pattern formatter writes, text and JSON") {
  const char* zone = GENERATE("UTC0", "IST-5:30", "NST3:30");  // POSIX zones: no tzdata needed
  const TimeZone tz(zone);
  const std::vector<std::string> messages{
      "req=12 verb=filter pod=default/job-0 nodes_in=500 nodes_out=500 status=200 ms=0.25",
      "", "pod \"a\\b\" with a newline\nforged=1 and \x1b[31m colour \x7f end", "caf\xc3\xa9 \xff"};
  // Over second, minute and day boundaries, and within one second (the cached part).
  const auto base = std::chrono::system_clock::time_point(std::chrono::seconds(1796169599));
  const std::vector<std::chrono::milliseconds> offsets{std::chrono::milliseconds(0), std::chrono::milliseconds(7),
                                                       std::chrono::milliseconds(999), std::chrono::milliseconds(1000),
                                                       std::chrono::milliseconds(60'001), std::chrono::milliseconds(86'400'123)};
  for (const LogFormat format : {LogFormat::kText, LogFormat::kJson}) {
    LogLineFormatter ours(format);
    const auto reference = gpu_extender::make_pattern_formatter(format);
    for (const auto level : {spdlog::level::debug, spdlog::level::info, spdlog::level::warn, spdlog::level::err}) {
      for (const auto offset : offsets) {
        for (const std::string& message : messages) {
          spdlog::details::log_msg msg(base + offset, spdlog::source_loc{}, "gpu-extender", level, message);
          INFO(zone << " " << (format == LogFormat::kJson ? "json" : "text") << " " << message);
          CHECK(formatted(ours, msg) == formatted(*reference, msg));
        }
      }
    }
  }
}

TEST_CASE("log line formatter: control characters are escaped in text and quoted in JSON") {
  spdlog::details::log_msg msg(std::chrono::system_clock::time_point(std::chrono::seconds(0)), spdlog::source_loc{},
                               "gpu-extender", spdlog::level::info, "a\nb\x01");
  LogLineFormatter text(LogFormat::kText), json(LogFormat::kJson);
  const std::string line = formatted(text, msg);
  CHECK(line.find("info a\\x0ab\\x01\n") != std::string::npos);
  CHECK(line.find('\n') == line.size() - 1);  // one line, however many newlines the message held
  CHECK(formatted(json, msg).find(R"("level":"info","msg":"a\nb\u0001"})") != std::string::npos);
}
