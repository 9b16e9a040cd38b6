#include "server/observability/group_metrics.h"

namespace gpu_extender {
namespace {

using prometheus::MetricType;

// From a few seconds (a job's pods created together) to past the default 2-minute TTL.
const prometheus::Histogram::BucketBoundaries kPlacementBuckets = {0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
// Refusals of a group's member, by why; each present from the start so that rate() sees zeros.
constexpr const char* kWaitReasons[] = {"no_domain", "no_room", "invalid", "full"};

prometheus::ClientMetric sample(MetricType type, double value, std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (type == MetricType::Counter) m.counter.value = value;
  else m.gauge.value = value;
  return m;
}

prometheus::MetricFamily one(const char* name, const char* help, MetricType type, double value) {
  return {name, help, type, {sample(type, value)}};
}

}  // namespace

GroupMetrics::GroupMetrics(prometheus::Registry& registry, std::shared_ptr<PlacementLedger> ledger)
    : ledger_(std::move(ledger)),
      placement_(&prometheus::BuildHistogram()
                      .Name("gpu_extender_group_placement_seconds")
                      .Help("Seconds from a pod group's first member seen to its last member bound.")
                      .Register(registry)
                      .Add({}, kPlacementBuckets)) {
  ledger_->on_group_placed([h = placement_](double seconds) { h->Observe(seconds); });
}

GroupMetrics::~GroupMetrics() { ledger_->on_group_placed(nullptr); }

std::vector<prometheus::MetricFamily> GroupMetrics::collect() const {
  const GroupBook::Stats s = ledger_->stats().groups;
  std::vector<prometheus::MetricFamily> out;
  out.push_back(one("gpu_extender_groups_planned_total", "Pod groups planned whole (their room held at once).",
                    MetricType::Counter, static_cast<double>(s.planned)));
  out.push_back(one("gpu_extender_groups_placed_total", "Pod groups whose every member is bound.", MetricType::Counter,
                    static_cast<double>(s.placed)));
  out.push_back(one("gpu_extender_groups_expired_total",
                    "Pod groups whose held room was given back: no progress for the group TTL.", MetricType::Counter,
                    static_cast<double>(s.expired)));
  out.push_back(one("gpu_extender_groups_moved_total",
                    "Group plans made again because a member's /filter no longer had any of its open planned nodes "
                    "(the scheduler's own filters refused them, or its sample left them out).",
                    MetricType::Counter, static_cast<double>(s.moved)));
  out.push_back(one("gpu_extender_group_gate_timeouts_total",
                    "Group members whose /bind was refused because the rest of the group did not pass within "
                    "--group-gate-ms (nothing of the group bound).",
                    MetricType::Counter, static_cast<double>(s.gate_timeouts)));
  prometheus::MetricFamily waits{"gpu_extender_group_waits_total",
                                 "Group members refused everywhere, by reason: no_domain (no domain of the required "
                                 "level holds the group), no_room (the cluster does not), invalid (annotations), full (every "
                                 "member place taken).",
                                 MetricType::Counter, {}};
  for (const char* reason : kWaitReasons) {
    auto it = s.waiting.find(reason);
    waits.metric.push_back(sample(MetricType::Counter, it == s.waiting.end() ? 0 : static_cast<double>(it->second),
                                  {{"reason", reason}}));
  }
  out.push_back(std::move(waits));
  out.push_back(one("gpu_extender_groups_reserved_gpus", "GPUs held for group members still to place.", MetricType::Gauge,
                    static_cast<double>(s.reserved_gpus_milli) / 1000.0));
  out.push_back(one("gpu_extender_groups", "Pod groups the extender is placing (planned or waiting).", MetricType::Gauge,
                    static_cast<double>(s.groups)));
  out.push_back(one("gpu_extender_group_planning_seconds", "How long the last group planning took.", MetricType::Gauge,
                    s.last_planning_seconds));
  return out;
}

}  // namespace gpu_extender
