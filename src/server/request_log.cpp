#include "request_log.h"

#include <spdlog/spdlog.h>

namespace gpu_extender {

void log_request(const RequestRecord& r, const VerbSummary& summary) {
  const std::string_view verb = verb_name(r.verb);
  if (summary.error.empty()) {
    spdlog::info(
        "req={} verb={} pod={} nodes_in={} nodes_out={}{}{}{}{}{} status={} bytes_in={} bytes_out={} read_ms={:.2f} "
        "bind_wait_ms={:.2f} ms={:.2f}",
        r.id, verb, summary.pod, summary.nodes_in, summary.nodes_out, summary.top_scores.empty() ? "" : " top=",
        summary.top_scores, summary.detail.empty() ? "" : " detail=\"", summary.detail,
        summary.detail.empty() ? "" : "\"", r.status, r.bytes_in, r.bytes_out, r.read_ms, summary.bind_wait_ms, r.ms);
  } else {
    spdlog::warn("req={} verb={} pod={} status={} bytes_in={} ms={:.2f} error=\"{}\"", r.id, verb,
                 summary.pod.empty() ? "-" : summary.pod, r.status, r.bytes_in, r.ms, summary.error);
  }
  for (const auto& [node, reason] : summary.reasons) spdlog::debug("req={} node={} refused: {}", r.id, node, reason);
}

}  // namespace gpu_extender
