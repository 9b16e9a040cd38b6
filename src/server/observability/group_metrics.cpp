#include "server/observability/group_metrics.h"

#include "server/observability/metric_table.h"

namespace gpu_extender {
namespace {

// From a few seconds (a job's pods created together) to past the default 2-minute TTL.
const prometheus::Histogram::BucketBoundaries kPlacementBuckets = {0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
// Refusals of a group's member, by why; each present from the start so that rate() sees zeros.
constexpr const char* kWaitReasons[] = {"no_domain", "no_room", "invalid", "full", "preempting"};

}  // namespace

GroupMetrics::GroupMetrics(prometheus::Registry& registry, std::shared_ptr<PlacementLedger> ledger)
    : ledger_(std::move(ledger)),
      placement_(&histogram_family(registry, Metric::kGroupPlacementSeconds).Add({}, kPlacementBuckets)) {
  ledger_->on_group_placed([h = placement_](double seconds) { h->Observe(seconds); });
}

GroupMetrics::~GroupMetrics() { ledger_->on_group_placed(nullptr); }

std::vector<prometheus::MetricFamily> GroupMetrics::collect() const {
  const GroupBook::Stats s = ledger_->stats().groups;
  std::vector<prometheus::MetricFamily> out;
  out.push_back(single(Metric::kGroupsPlannedTotal, static_cast<double>(s.planned)));
  out.push_back(single(Metric::kGroupsPlacedTotal, static_cast<double>(s.placed)));
  out.push_back(single(Metric::kGroupsExpiredTotal, static_cast<double>(s.expired)));
  out.push_back(single(Metric::kGroupsMovedTotal, static_cast<double>(s.moved)));
  out.push_back(single(Metric::kGroupGateTimeoutsTotal, static_cast<double>(s.gate_timeouts)));
  out.push_back(single(Metric::kGroupPreemptionsTotal, static_cast<double>(s.preemptions)));
  out.push_back(single(Metric::kGroupPreemptionVictimsTotal, static_cast<double>(s.preemption_victims)));
  out.push_back(single(Metric::kGroupPreemptionsFailedTotal, static_cast<double>(s.preemptions_failed)));
  prometheus::MetricFamily waits = family(Metric::kGroupWaitsTotal);
  for (const char* reason : kWaitReasons) {
    auto it = s.waiting.find(reason);
    add_sample(waits, it == s.waiting.end() ? 0 : static_cast<double>(it->second), {{"reason", reason}});
  }
  out.push_back(std::move(waits));
  out.push_back(single(Metric::kGroupsReservedGpus, static_cast<double>(s.reserved_gpus_milli) / 1000.0));
  out.push_back(single(Metric::kGroups, static_cast<double>(s.groups)));
  out.push_back(single(Metric::kGroupPlanningSeconds, s.last_planning_seconds));
  return out;
}

}  // namespace gpu_extender
