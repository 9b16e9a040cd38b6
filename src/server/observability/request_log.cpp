#include "server/observability/request_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace gpu_extender {
namespace {

// "12.34" (to the nearest hundredth, as {:.2f} gives it). Why not {:.2f}: fmt's fixed-precision path
// converts through a big decimal, and a line has three such values: integers are a fraction of that.
class TwoDecimals {
 public:
  explicit TwoDecimals(double value) {
    const long long hundredths = std::llround(std::max(value, 0.0) * 100.0);
    char* end = std::to_chars(text_.data(), text_.data() + text_.size() - 3, hundredths / 100).ptr;
    *end++ = '.';
    *end++ = static_cast<char>('0' + hundredths % 100 / 10);
    *end++ = static_cast<char>('0' + hundredths % 10);
    size_ = static_cast<size_t>(end - text_.data());
  }
  std::string_view view() const { return {text_.data(), size_}; }

 private:
  std::array<char, 32> text_{};
  size_t size_ = 0;
};

}  // namespace

void log_request(const RequestRecord& r, const VerbSummary& summary) {
  const std::string_view verb = verb_name(r.verb);
  if (summary.error.empty()) {
    spdlog::info(
        "req={} verb={} pod={} nodes_in={} nodes_out={}{}{}{}{}{} status={} bytes_in={} bytes_out={} read_ms={} "
        "bind_wait_ms={} ms={}",
        r.id, verb, summary.pod, summary.nodes_in, summary.nodes_out, summary.top_scores.empty() ? "" : " top=",
        summary.top_scores, summary.detail.empty() ? "" : " detail=\"", summary.detail,
        summary.detail.empty() ? "" : "\"", r.status, r.bytes_in, r.bytes_out, TwoDecimals(r.read_ms).view(), TwoDecimals(summary.bind_wait_ms).view(),
        TwoDecimals(r.ms).view());
  } else {
    spdlog::warn("req={} verb={} pod={} status={} bytes_in={} ms={} error=\"{}\"", r.id, verb,
                 summary.pod.empty() ? "-" : summary.pod, r.status, r.bytes_in, TwoDecimals(r.ms).view(), summary.error);
  }
  for (const auto& [node, reason] : summary.reasons) spdlog::debug("req={} node={} refused: {}", r.id, node, reason);
}

}  // namespace gpu_extender
