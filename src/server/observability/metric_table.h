#pragma once
// Every metric the extender exports, one entry each: its id, name, type and help. The collectors
// (metrics.cpp, group_metrics.cpp, process_metrics.cpp) name a metric by its id only, so a name or a
// help text is written here and nowhere else; docs/observability.md's metrics table is checked against this list
// (tests/unit/server/observability/metric_table_test.cpp). All names start with gpu_extender_ (process_* are the
// standard process metrics); counters end in _total; times in seconds, sizes in bytes.
//
// An X-macro, as rules/rule_table.h, so that the id enum and the specs come from this one list.
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <string>
#include <vector>

#define GPU_EXTENDER_METRICS(METRIC) \
  METRIC(kClusterNodes, "gpu_extender_cluster_nodes", Gauge, \
         "Nodes in the extender's cluster view.") \
  METRIC(kClusterPods, "gpu_extender_cluster_pods", Gauge, \
         "Pods holding resources on a node, in the cluster view.") \
  METRIC(kClusterAssumedPods, "gpu_extender_cluster_assumed_pods", Gauge, \
         "Pods bound by /bind and not yet confirmed by the watch.") \
  METRIC(kSharedGpuDevices, "gpu_extender_shared_gpu_devices", Gauge, \
         "GPUs shared by memory (gpushare's gpu-count) on the nodes in the view.") \
  METRIC(kSharedGpuFreeMemory, "gpu_extender_shared_gpu_free_memory", Gauge, \
         "Free shared GPU memory on those GPUs, in the policy's unit (GiB or MiB).") \
  METRIC(kSharedGpuFragmentedMemory, "gpu_extender_shared_gpu_fragmented_memory", Gauge, \
         "Free shared GPU memory on GPUs where it is less than the smallest pending shared request (no pending pod fits there), in the policy's unit; 0 while none is pending.") \
  METRIC(kDraNodes, "gpu_extender_dra_nodes", Gauge, \
         "Nodes whose GPUs come from DRA ResourceSlices (of the policy's dra.driver).") \
  METRIC(kDraGpus, "gpu_extender_dra_gpus", Gauge, \
         "Whole GPUs the DRA ResourceSlices publish.") \
  METRIC(kDraClaims, "gpu_extender_dra_claims", Gauge, \
         "Allocated ResourceClaims holding GPUs of the DRA driver on a node.") \
  METRIC(kDraHeldGpus, "gpu_extender_dra_held_gpus", Gauge, \
         "GPUs held by allocated ResourceClaims (a GPU shared by claims, or partitioned, counts once).") \
  METRIC(kDraUnavailableGpus, "gpu_extender_dra_unavailable_gpus", Gauge, \
         "DRA GPUs no claim holds that no whole-GPU claim can get either: in MIG mode, vfio only, tainted, or in a pool being republished.") \
  METRIC(kClusterSynced, "gpu_extender_cluster_synced", Gauge, \
         "1 once the first lists of nodes and pods are in the view.") \
  METRIC(kClusterLastEventAgeSeconds, "gpu_extender_cluster_last_event_age_seconds", Gauge, \
         "Seconds since the last watch event or bookmark (the view's staleness); -1 before the first.") \
  METRIC(kWatchListsTotal, "gpu_extender_watch_lists_total", Counter, \
         "Full lists of a resource (start, 410 Gone, errors).") \
  METRIC(kWatchRestartsTotal, "gpu_extender_watch_restarts_total", Counter, \
         "Watches of a resource that ended and were restarted, by reason.") \
  METRIC(kWatchEventsTotal, "gpu_extender_watch_events_total", Counter, \
         "Watch events applied, by resource.") \
  METRIC(kWatchObjectsNotUnderstoodTotal, "gpu_extender_watch_objects_not_understood_total", Counter, \
         "Objects (listed or watched) with a field the policy reads that could not be understood; what could be read still counts.") \
  METRIC(kGpuUtilizationRefreshAgeSeconds, "gpu_extender_gpu_utilization_refresh_age_seconds", Gauge, \
         "Seconds since the last good answer of Prometheus to the GPU utilisation query; -1 before the first.") \
  METRIC(kGpuUtilizationQueryErrorsTotal, "gpu_extender_gpu_utilization_query_errors_total", Counter, \
         "GPU utilisation queries to Prometheus that failed (no answer, an error, not a vector).") \
  METRIC(kGpuUtilizationNodes, "gpu_extender_gpu_utilization_nodes", Gauge, \
         "Nodes in the last good answer of the GPU utilisation query.") \
  METRIC(kRequestsTotal, "gpu_extender_requests_total", Counter, \
         "Requests by verb and HTTP status code.") \
  METRIC(kRequestDurationSeconds, "gpu_extender_request_duration_seconds", Histogram, \
         "Time from the request's arrival to its answer being ready, by verb (reading the body included).") \
  METRIC(kRequestBodyBytes, "gpu_extender_request_body_bytes", Histogram, \
         "Request body size, by verb.") \
  METRIC(kRequestNodes, "gpu_extender_request_nodes", Histogram, \
         "Nodes (or candidates) per request, by verb.") \
  METRIC(kFilterRejectionsTotal, "gpu_extender_filter_rejections_total", Counter, \
         "Nodes refused by /filter, by the rule that refused them (nodeCache: not in the node cache).") \
  METRIC(kAnswerErrorsTotal, "gpu_extender_answer_errors_total", Counter, \
         "Errors answered inside a 200 (the protocol's Error field; kube-scheduler only logs them), by verb and cause.") \
  METRIC(kBindsTotal, "gpu_extender_binds_total", Counter, \
         "Bind requests by result.") \
  METRIC(kSharedGpuBindsTotal, "gpu_extender_shared_gpu_binds_total", Counter, \
         "Pods bound to share a GPU by memory (a device chosen for them).") \
  METRIC(kPreemptionCandidatesTotal, "gpu_extender_preemption_candidates_total", Counter, \
         "Preemption candidate nodes kept or dropped by /preempt.") \
  METRIC(kConfigReloadsTotal, "gpu_extender_config_reloads_total", Counter, \
         "Policy reloads by result.") \
  METRIC(kBuildInfo, "gpu_extender_build_info", Gauge, \
         "Version and commit of the running binary (always 1).") \
  METRIC(kHttpThreads, "gpu_extender_http_threads", Gauge, \
         "Worker threads of the verb port; the pool grows one per open connection.") \
  METRIC(kHttpConnections, "gpu_extender_http_connections", Gauge, \
         "Connections of the verb port: busy (served by a thread), waiting (past --max-threads).") \
  METRIC(kBindWaitsTotal, "gpu_extender_bind_waits_total", Counter, \
         "/filter and /prioritize requests that waited for the /bind of the pod before.") \
  METRIC(kBindWaitSecondsTotal, "gpu_extender_bind_wait_seconds_total", Counter, \
         "Time /filter and /prioritize spent waiting for the previous pod's /bind.") \
  METRIC(kBindWaitTimeoutsTotal, "gpu_extender_bind_wait_timeouts_total", Counter, \
         "Expected /bind requests that did not come within --bind-wait-ms (the pod failed elsewhere).") \
  METRIC(kMemoryBudgetBytes, "gpu_extender_memory_budget_bytes", Gauge, \
         "Memory budget for request bodies (--memory-budget-bytes), bytes: total and charged now.") \
  METRIC(kMemoryBudgetWaitsTotal, "gpu_extender_memory_budget_waits_total", Counter, \
         "Requests that waited for the memory budget.") \
  METRIC(kMemoryBudgetRefusalsTotal, "gpu_extender_memory_budget_refusals_total", Counter, \
         "Requests answered 503: the memory budget had no room in time.") \
  METRIC(kTlsCertificateExpiry, "gpu_extender_tls_certificate_expiration_timestamp_seconds", Gauge, \
         "When a certificate of a TLS port stops being valid (notAfter, Unix seconds), by port and certificate (serving, client-ca: the CA bundle's earliest).") \
  METRIC(kDeletionCostLeader, "gpu_extender_deletion_cost_leader", Gauge, \
         "1 while this replica holds the Lease and writes pod deletion costs.") \
  METRIC(kDeletionCostPatchesTotal, "gpu_extender_deletion_cost_patches_total", Counter, \
         "Pod deletion cost patches by outcome.") \
  METRIC(kDeletionCostPassesTotal, "gpu_extender_deletion_cost_passes_total", Counter, \
         "Whole passes of the deletion-cost writer over the pods it keeps costs of, while leading.") \
  METRIC(kDeletionCostPods, "gpu_extender_deletion_cost_pods", Gauge, \
         "Pods whose deletion cost this extender keeps, by cost bucket (0: emptiest nodes), as of the last pass.") \
  METRIC(kDeletionCostUserOwnedPods, "gpu_extender_deletion_cost_user_owned_pods", Gauge, \
         "Pods this extender places whose deletion cost someone else set: left alone.") \
  METRIC(kGroupPlacementSeconds, "gpu_extender_group_placement_seconds", Histogram, \
         "Seconds from a pod group's first member seen to its last member bound.") \
  METRIC(kGroupsPlannedTotal, "gpu_extender_groups_planned_total", Counter, \
         "Pod groups planned whole (their room held at once).") \
  METRIC(kGroupsPlacedTotal, "gpu_extender_groups_placed_total", Counter, \
         "Pod groups whose every member is bound.") \
  METRIC(kGroupsExpiredTotal, "gpu_extender_groups_expired_total", Counter, \
         "Pod groups whose held room was given back: no progress for the group TTL.") \
  METRIC(kGroupsMovedTotal, "gpu_extender_groups_moved_total", Counter, \
         "Group plans made again because a member's /filter no longer had any of its open planned nodes (the scheduler's own filters refused them, or its sample left them out).") \
  METRIC(kGroupGateTimeoutsTotal, "gpu_extender_group_gate_timeouts_total", Counter, \
         "Group members whose /bind was refused because the rest of the group did not pass within --group-gate-ms (nothing of the group bound).") \
  METRIC(kGroupWaitsTotal, "gpu_extender_group_waits_total", Counter, \
         "Group members refused everywhere, by reason: no_domain (no domain of the required level holds the group), no_room (the cluster does not), invalid (annotations), full (every member place taken), preempting (the pods evicted for it are still terminating).") \
  METRIC(kGroupPreemptionsTotal, "gpu_extender_group_preemptions_total", Counter, \
         "Pod groups that had room made in one domain by evicting pods of lower priority.") \
  METRIC(kGroupPreemptionVictimsTotal, "gpu_extender_group_preemption_victims_total", Counter, \
         "Pods evicted (Eviction API) to make room for pod groups.") \
  METRIC(kGroupPreemptionsFailedTotal, "gpu_extender_group_preemptions_failed_total", Counter, \
         "Rooms made for pod groups and given back: an eviction refused after its dry run, or the victims did not leave within --group-preemption-wait-seconds.") \
  METRIC(kGroupsReservedGpus, "gpu_extender_groups_reserved_gpus", Gauge, \
         "GPUs held for group members still to place.") \
  METRIC(kGroups, "gpu_extender_groups", Gauge, \
         "Pod groups the extender is placing (planned or waiting).") \
  METRIC(kGroupPlanningSeconds, "gpu_extender_group_planning_seconds", Gauge, \
         "How long the last group planning took.") \
  METRIC(kProcessCpuSecondsTotal, "process_cpu_seconds_total", Counter, \
         "Total user and system CPU time spent in seconds.") \
  METRIC(kProcessStartTimeSeconds, "process_start_time_seconds", Gauge, \
         "Start time of the process since unix epoch in seconds.") \
  METRIC(kProcessVirtualMemoryBytes, "process_virtual_memory_bytes", Gauge, \
         "Virtual memory size in bytes.") \
  METRIC(kProcessResidentMemoryBytes, "process_resident_memory_bytes", Gauge, \
         "Resident memory size in bytes.") \
  METRIC(kProcessOpenFds, "process_open_fds", Gauge, \
         "Number of open file descriptors.") \
  METRIC(kProcessMaxFds, "process_max_fds", Gauge, \
         "Maximum number of open file descriptors.")

namespace gpu_extender {

enum class Metric {
#define GPU_EXTENDER_METRIC_ID(id, name, type, help) id,
  GPU_EXTENDER_METRICS(GPU_EXTENDER_METRIC_ID)
#undef GPU_EXTENDER_METRIC_ID
};

struct MetricSpec {
  const char* name;
  prometheus::MetricType type;
  const char* help;
};

inline constexpr MetricSpec kMetricSpecs[] = {
#define GPU_EXTENDER_METRIC_SPEC(id, name, type, help) {name, prometheus::MetricType::type, help},
    GPU_EXTENDER_METRICS(GPU_EXTENDER_METRIC_SPEC)
#undef GPU_EXTENDER_METRIC_SPEC
};

inline const MetricSpec& spec(Metric id) { return kMetricSpecs[static_cast<size_t>(id)]; }

// A family as collectors build it at scrape time: `id`'s name, help and type, with `samples`.
inline prometheus::MetricFamily family(Metric id, std::vector<prometheus::ClientMetric> samples = {}) {
  const MetricSpec& s = spec(id);
  return {s.name, s.help, s.type, std::move(samples)};
}

// One sample of a counter or a gauge.
inline prometheus::ClientMetric sample(prometheus::MetricType type, double value,
                                       std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (type == prometheus::MetricType::Counter) m.counter.value = value;
  else m.gauge.value = value;
  return m;
}

// `id`'s family with one sample of `value`.
inline prometheus::MetricFamily single(Metric id, double value, std::vector<prometheus::ClientMetric::Label> labels = {}) {
  return family(id, {sample(spec(id).type, value, std::move(labels))});
}

// Adds a sample of `value` to `f` (a counter's or a gauge's).
inline void add_sample(prometheus::MetricFamily& f, double value, std::vector<prometheus::ClientMetric::Label> labels = {}) {
  f.metric.push_back(sample(f.type, value, std::move(labels)));
}

// A family kept in `registry` (counters and histograms that requests update).
template <typename Builder>
auto& registered(Builder builder, prometheus::Registry& registry, Metric id) {
  return builder.Name(spec(id).name).Help(spec(id).help).Register(registry);
}
inline prometheus::Family<prometheus::Counter>& counter_family(prometheus::Registry& registry, Metric id) {
  return registered(prometheus::BuildCounter(), registry, id);
}
inline prometheus::Family<prometheus::Gauge>& gauge_family(prometheus::Registry& registry, Metric id) {
  return registered(prometheus::BuildGauge(), registry, id);
}
inline prometheus::Family<prometheus::Histogram>& histogram_family(prometheus::Registry& registry, Metric id) {
  return registered(prometheus::BuildHistogram(), registry, id);
}

}  // namespace gpu_extender
