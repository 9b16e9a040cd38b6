#pragma once
// The log line's format, in one place: the spdlog patterns (text for people, one JSON object a line
// for log pipelines) and a formatter that writes exactly what spdlog's pattern formatter writes for
// them, in one pass.
//
// Why a formatter of its own: the request log writes a line per request (three a placed pod), and
// spdlog's pattern formatter spends most of a line's cost in its per-flag virtual calls, padding
// checks and time caches. This one appends the cached date and time (localtime, recomputed once a
// second as spdlog does), the milliseconds, the UTC offset, the level and the message, escaped as
// the patterns' %* flag escapes it. The terminal keeps spdlog's formatter (its colour markers).
// Not thread-safe (as spdlog formatters are not): a sink calls it under its own lock.
#include <spdlog/formatter.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace gpu_extender {

enum class LogFormat { kText, kJson };

// The patterns, for spdlog::pattern_formatter with %* as the message flag of that format
// (make_pattern_formatter).
inline constexpr std::string_view kTextLogPattern = "%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %*";
inline constexpr std::string_view kJsonLogPattern = R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","msg":%*})";

// The message as the text format writes it: control characters as \xNN. Pod and node names come from
// users: a newline in one must not forge a log line, nor a terminal escape reach an operator's screen.
void append_escaped_message(std::string_view message, spdlog::memory_buf_t& dest);
// spdlog's pattern formatter for `format`, %* included.
std::unique_ptr<spdlog::formatter> make_pattern_formatter(LogFormat format);

class LogLineFormatter final : public spdlog::formatter {
 public:
  explicit LogLineFormatter(LogFormat format) : format_(format) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<LogLineFormatter>(format_); }

 private:
  void cache_second(std::chrono::seconds since_epoch);

  const LogFormat format_;
  std::chrono::seconds cached_{-1};
  std::string date_time_;  // "2026-12-01T23:51:44" of cached_, local time
  std::string offset_;     // "+01:00"
};

}  // namespace gpu_extender
