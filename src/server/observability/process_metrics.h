#pragma once
// The process_* metrics Prometheus clients conventionally export, read from /proc at scrape time.
#include <prometheus/collectable.h>

namespace gpu_extender {

class ProcessCollector final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace gpu_extender
