#include "server/observability/log_line_formatter.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "common/json_writer.h"

namespace gpu_extender {
namespace {

void append(spdlog::memory_buf_t& dest, std::string_view text) { dest.append(text.data(), text.data() + text.size()); }

// The message as `format` writes it: escaped (text) or a quoted JSON string.
void append_message(LogFormat format, const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const std::string_view message(msg.payload.data(), msg.payload.size());
  if (format == LogFormat::kText) {
    append_escaped_message(message, dest);
    return;
  }
  std::string quoted;
  append_json_string(quoted, message);
  append(dest, quoted);
}

// %* : the message of `format`.
class MessageFlag final : public spdlog::custom_flag_formatter {
 public:
  explicit MessageFlag(LogFormat format) : format_(format) {}
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    append_message(format_, msg, dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<MessageFlag>(format_); }

 private:
  LogFormat format_;
};

void append_digits(spdlog::memory_buf_t& dest, long value, int digits) {
  char text[8];
  for (int i = digits - 1; i >= 0; --i, value /= 10) text[i] = static_cast<char>('0' + value % 10);
  dest.append(text, text + digits);
}

}  // namespace

void append_escaped_message(std::string_view message, spdlog::memory_buf_t& dest) {
  static constexpr char kHex[] = "0123456789abcdef";
  const char* from = message.data();
  const char* const end = from + message.size();
  // Runs of printable bytes are appended whole (a request log line has no byte to escape).
  while (from < end) {
    const char* special = std::find_if(from, end, [](char ch) {
      const auto c = static_cast<unsigned char>(ch);
      return c < 0x20 || c == 0x7f;
    });
    dest.append(from, special);
    if (special == end) break;
    const auto c = static_cast<unsigned char>(*special);
    const char escaped[] = {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    dest.append(escaped, escaped + 4);
    from = special + 1;
  }
}

std::unique_ptr<spdlog::formatter> make_pattern_formatter(LogFormat format) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<MessageFlag>('*', format).set_pattern(
      std::string(format == LogFormat::kText ? kTextLogPattern : kJsonLogPattern));
  return formatter;
}

void LogLineFormatter::cache_second(std::chrono::seconds since_epoch) {
  const std::time_t seconds = since_epoch.count();
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  date_time_.assign(text, n);
  // As spdlog's %z: the offset from UTC in minutes, as +hh:mm.
  const long minutes = local.tm_gmtoff / 60;
  const long away = minutes < 0 ? -minutes : minutes;
  std::snprintf(text, sizeof text, "%c%02ld:%02ld", minutes < 0 ? '-' : '+', away / 60, away % 60);
  offset_ = text;
  cached_ = since_epoch;
}

void LogLineFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const auto since_epoch = msg.time.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  if (seconds != cached_) cache_second(seconds);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
  const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
  const bool json = format_ == LogFormat::kJson;
  if (json) append(dest, R"({"time":")");
  append(dest, date_time_);
  dest.push_back('.');
  append_digits(dest, static_cast<long>(millis), 3);
  append(dest, offset_);
  append(dest, json ? R"(","level":")" : " ");
  dest.append(level.data(), level.data() + level.size());
  append(dest, json ? R"(","msg":)" : " ");
  append_message(format_, msg, dest);
  if (json) dest.push_back('}');
  append(dest, spdlog::details::os::default_eol);
}

}  // namespace gpu_extender
