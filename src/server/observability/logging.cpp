#include "server/observability/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "server/observability/batched_log_sink.h"
#include "server/observability/log_line_formatter.h"

namespace gpu_extender {

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
  // A pipe's lines are written by the one-pass formatter, the terminal's by spdlog's (its colours).
  const LogFormat log_format = format == "json" ? LogFormat::kJson : LogFormat::kText;
  if (terminal) logger->set_formatter(make_pattern_formatter(log_format));
  else logger->set_formatter(std::make_unique<LogLineFormatter>(log_format));
  logger->set_level(spdlog::level::from_str(level));
  // Warnings and errors are written before the call that logs them returns (the batched sink writes
  // them at once, and what came before them).
  logger->flush_on(terminal ? spdlog::level::info : spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

}  // namespace gpu_extender
