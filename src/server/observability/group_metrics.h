#pragma once
// gpu_extender_group*: pod groups (group_book.h) planned, placed, waiting by reason and expired, the
// GPUs held for members still to place, and the time from a group's first member to its last bind.
// Counts are read from the ledger at each scrape; the time is a histogram the ledger feeds as groups end.
#include <memory>
#include <vector>

#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include "gpu_extender/state/placement_ledger.h"

namespace gpu_extender {

class GroupMetrics {
 public:
  GroupMetrics(prometheus::Registry& registry, std::shared_ptr<PlacementLedger> ledger);
  ~GroupMetrics();
  std::vector<prometheus::MetricFamily> collect() const;

 private:
  std::shared_ptr<PlacementLedger> ledger_;
  prometheus::Histogram* placement_;
};

}  // namespace gpu_extender
