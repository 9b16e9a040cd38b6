#pragma once
// Process-wide logging set-up (spdlog, to stderr).
#include <string>

namespace gpu_extender {

void configure_logging(const std::string& level);

}  // namespace gpu_extender
