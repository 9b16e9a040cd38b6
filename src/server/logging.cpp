#include "logging.h"

#include <algorithm>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "batched_log_sink.h"

#include "common/json_writer.h"

namespace gpu_extender {
namespace {

// %* : the message as a quoted JSON string.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string quoted;
    append_json_string(quoted, std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(quoted.data(), quoted.data() + quoted.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessageFlag>(); }
};

// %* in text mode: the message with control characters escaped. Pod and node names come from
// users: a newline in one must not forge a log line, nor a terminal escape reach an operator's screen.
class EscapedMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    static constexpr char kHex[] = "0123456789abcdef";
    const char* from = msg.payload.data();
    const char* const end = from + msg.payload.size();
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
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessageFlag>(); }
};

}  // namespace

void configure_logging(const std::string& level, const std::string& format) {
  // A terminal gets each line as it is logged, in colour; a pipe (a container runtime, a test) gets
  // lines in batches: one write a batch instead of one a request (batched_log_sink.h).
  std::shared_ptr<spdlog::logger> logger;
  const bool terminal = isatty(STDERR_FILENO) == 1;
  if (terminal) {
    logger = spdlog::stderr_color_mt("gpu-extender");
  } else {
    constexpr auto kBatchFor = std::chrono::milliseconds(50);
    constexpr size_t kMaxHeld = size_t{4} << 20;
    logger = std::make_shared<spdlog::logger>("gpu-extender",
                                              std::make_shared<BatchedLogSink>(STDERR_FILENO, kBatchFor, kMaxHeld));
  }
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<JsonMessageFlag>('*').set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","msg":%*})");
    logger->set_formatter(std::move(formatter));
  } else {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<EscapedMessageFlag>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %*");
    logger->set_formatter(std::move(formatter));
  }
  logger->set_level(spdlog::level::from_str(level));
  // Warnings and errors are written before the call that logs them returns (the batched sink writes
  // them at once, and what came before them).
  logger->flush_on(terminal ? spdlog::level::info : spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

}  // namespace gpu_extender
