#pragma once
// Process-wide logging set-up (spdlog, to stderr): text for people, or one JSON object per line for log
// pipelines ({"time","level","msg"}).
#include <string>

namespace gpu_extender {

void configure_logging(const std::string& level, const std::string& format);

}  // namespace gpu_extender
