#include "server/observability/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <charconv>
#include <map>
#include <mutex>
#include <unordered_map>

#include "gpu_extender/common/build_info.h"
#include "gpu_extender/usage/usage_source.h"
#include "server/observability/group_metrics.h"
#include "server/observability/process_metrics.h"

namespace gpu_extender {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

// Resolves both 100 us (a 10-node names-mode call) and 10 s (past the scheduler's 5 s timeout).
const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
const prometheus::Histogram::BucketBoundaries kBodyBuckets = {
    1e3, 1e4, 1e5, 1e6, 5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8};
const prometheus::Histogram::BucketBoundaries kNodeBuckets = {1, 3, 10, 30, 100, 300, 1000, 3000, 5000, 10000};

// The children of a counter family that requests touch, kept by their label values. Why: prometheus-cpp's
// Family::Add builds a new child and a label map before it finds the labels known (an allocation, a
// map of strings hashed, a free: a few percent of the extender's CPU per placed pod, several calls a
// request). Here: one lock and one lookup, no allocation once a child is known. The label values
// come from small fixed sets (verbs, status codes, rule names, causes).
class CounterChildren {
 public:
  CounterChildren(prometheus::Family<prometheus::Counter>& family, std::vector<std::string> label_names)
      : family_(family), label_names_(std::move(label_names)) {}

  // `values`: one per label name, in their order.
  prometheus::Counter& get(std::initializer_list<std::string_view> values) {
    thread_local std::string key;
    key.clear();
    for (const std::string_view v : values) key.append(v).push_back('\0');
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = children_.find(std::string_view(key)); it != children_.end()) return *it->second;
    prometheus::Labels labels;
    size_t i = 0;
    for (const std::string_view v : values) labels.emplace(label_names_[i++], std::string(v));
    prometheus::Counter& child = family_.Add(labels);
    children_.emplace(key, &child);
    return child;
  }

 private:
  prometheus::Family<prometheus::Counter>& family_;
  const std::vector<std::string> label_names_;
  std::mutex mutex_;
  std::unordered_map<std::string, prometheus::Counter*, StringHash, std::equal_to<>> children_;
};

// Cluster-view gauges and watch counters, computed when Prometheus scrapes.
class ClusterCollector final : public prometheus::Collectable {
 public:
  ClusterCollector(std::shared_ptr<const ClusterView> view, std::shared_ptr<const PlacementLedger> ledger,
                   std::function<std::vector<WatchCounts>()> watches)
      : view_(std::move(view)), ledger_(std::move(ledger)), watches_(std::move(watches)) {}

  std::vector<MetricFamily> Collect() const override {
    const ClusterView::Stats s = view_->stats();
    const PlacementLedger::Stats in_flight = ledger_->stats();
    std::vector<MetricFamily> out;
    auto gauge = [&](const char* name, const char* help, double value) {
      MetricFamily f{name, help, MetricType::Gauge, {}};
      prometheus::ClientMetric m;
      m.gauge.value = value;
      f.metric.push_back(m);
      out.push_back(std::move(f));
    };
    gauge("gpu_extender_cluster_nodes", "Nodes in the extender's cluster view.", static_cast<double>(s.nodes));
    gauge("gpu_extender_cluster_pods", "Pods holding resources on a node, in the cluster view.", static_cast<double>(s.pods));
    gauge("gpu_extender_cluster_assumed_pods", "Pods bound by /bind and not yet confirmed by the watch.",
          static_cast<double>(in_flight.assumed));
    const ClusterView::SharedGpuStats shared = view_->shared_gpu_stats(ledger_->smallest_pending_shared_gpu_memory());
    gauge("gpu_extender_shared_gpu_devices", "GPUs shared by memory (gpushare's gpu-count) on the nodes in the view.",
          static_cast<double>(shared.devices));
    gauge("gpu_extender_shared_gpu_free_memory", "Free shared GPU memory on those GPUs, in the policy's unit (GiB or MiB).",
          static_cast<double>(shared.free));
    gauge("gpu_extender_shared_gpu_fragmented_memory",
          "Free shared GPU memory on GPUs where it is less than the smallest pending shared request (no pending pod "
          "fits there), in the policy's unit; 0 while none is pending.",
          static_cast<double>(shared.fragmented));
    gauge("gpu_extender_cluster_synced", "1 once the first lists of nodes and pods are in the view.",
          view_->ready() ? 1 : 0);
    gauge("gpu_extender_cluster_last_event_age_seconds",
          "Seconds since the last watch event or bookmark (the view's staleness); -1 before the first.",
          s.seconds_since_event);
    MetricFamily lists{"gpu_extender_watch_lists_total", "Full lists of a resource (start, 410 Gone, errors).",
                       MetricType::Counter, {}};
    MetricFamily restarts{"gpu_extender_watch_restarts_total", "Watches of a resource that ended and were restarted, by reason.",
                          MetricType::Counter, {}};
    MetricFamily events{"gpu_extender_watch_events_total", "Watch events applied, by resource.", MetricType::Counter, {}};
    MetricFamily not_understood{"gpu_extender_watch_objects_not_understood_total",
                                "Objects (listed or watched) with a field the policy reads that could not be understood; "
                                "what could be read still counts.",
                                MetricType::Counter, {}};
    for (const WatchCounts& w : watches_()) {
      auto add = [&](MetricFamily& f, double value, std::vector<prometheus::ClientMetric::Label> labels) {
        prometheus::ClientMetric m;
        m.label = std::move(labels);
        m.counter.value = value;
        f.metric.push_back(std::move(m));
      };
      add(lists, static_cast<double>(w.lists), {{"resource", w.resource}});
      add(restarts, static_cast<double>(w.relists_after_gone), {{"reason", "gone"}, {"resource", w.resource}});
      add(restarts, static_cast<double>(w.failures), {{"reason", "error"}, {"resource", w.resource}});
      add(events, static_cast<double>(w.events), {{"resource", w.resource}});
      add(not_understood, static_cast<double>(w.not_understood), {{"resource", w.resource}});
    }
    out.push_back(std::move(lists));
    out.push_back(std::move(restarts));
    out.push_back(std::move(events));
    out.push_back(std::move(not_understood));
    return out;
  }

 private:
  std::shared_ptr<const ClusterView> view_;
  std::shared_ptr<const PlacementLedger> ledger_;
  std::function<std::vector<WatchCounts>()> watches_;
};

// The Prometheus utilisation source, read at scrape time.
class UtilizationCollector final : public prometheus::Collectable {
 public:
  explicit UtilizationCollector(std::shared_ptr<const GpuUtilizationSource> source) : source_(std::move(source)) {}
  std::vector<MetricFamily> Collect() const override {
    const GpuUtilizationSource::Stats s = source_->stats();
    std::vector<MetricFamily> out;
    auto add = [&](const char* name, const char* help, MetricType type, double value) {
      MetricFamily f{name, help, type, {}};
      prometheus::ClientMetric m;
      if (type == MetricType::Counter) m.counter.value = value;
      else m.gauge.value = value;
      f.metric.push_back(m);
      out.push_back(std::move(f));
    };
    add("gpu_extender_gpu_utilization_refresh_age_seconds",
        "Seconds since the last good answer of Prometheus to the GPU utilisation query; -1 before the first.",
        MetricType::Gauge, s.seconds_since_success);
    add("gpu_extender_gpu_utilization_query_errors_total",
        "GPU utilisation queries to Prometheus that failed (no answer, an error, not a vector).", MetricType::Counter,
        static_cast<double>(s.errors));
    add("gpu_extender_gpu_utilization_nodes", "Nodes in the last good answer of the GPU utilisation query.",
        MetricType::Gauge, static_cast<double>(s.nodes));
    return out;
  }

 private:
  std::shared_ptr<const GpuUtilizationSource> source_;
};

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter().Name("gpu_extender_requests_total").Help("Requests by verb and HTTP status code.").Register(*registry);
  prometheus::Family<prometheus::Histogram>& latency =
      prometheus::BuildHistogram()
          .Name("gpu_extender_request_duration_seconds")
          .Help("Time from the request's arrival to its answer being ready, by verb (reading the body included).")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& body =
      prometheus::BuildHistogram().Name("gpu_extender_request_body_bytes").Help("Request body size, by verb.").Register(*registry);
  prometheus::Family<prometheus::Histogram>& nodes =
      prometheus::BuildHistogram().Name("gpu_extender_request_nodes").Help("Nodes (or candidates) per request, by verb.").Register(*registry);
  prometheus::Family<prometheus::Counter>& rejections =
      prometheus::BuildCounter()
          .Name("gpu_extender_filter_rejections_total")
          .Help("Nodes refused by /filter, by the rule that refused them (nodeCache: not in the node cache).")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& answer_errors =
      prometheus::BuildCounter()
          .Name("gpu_extender_answer_errors_total")
          .Help("Errors answered inside a 200 (the protocol's Error field; kube-scheduler only logs them), by verb and cause.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& binds =
      prometheus::BuildCounter().Name("gpu_extender_binds_total").Help("Bind requests by result.").Register(*registry);
  prometheus::Counter& shared_gpu_binds = prometheus::BuildCounter()
                                              .Name("gpu_extender_shared_gpu_binds_total")
                                              .Help("Pods bound to share a GPU by memory (a device chosen for them).")
                                              .Register(*registry)
                                              .Add({});
  prometheus::Family<prometheus::Counter>& preemption =
      prometheus::BuildCounter()
          .Name("gpu_extender_preemption_candidates_total")
          .Help("Preemption candidate nodes kept or dropped by /preempt.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& reloads =
      prometheus::BuildCounter().Name("gpu_extender_config_reloads_total").Help("Policy reloads by result.").Register(*registry);
  prometheus::Family<prometheus::Gauge>& build =
      prometheus::BuildGauge().Name("gpu_extender_build_info").Help("Version and commit of the running binary (always 1).").Register(*registry);

  struct PerVerb {
    prometheus::Histogram* latency;
    prometheus::Histogram* body;
    prometheus::Histogram* nodes;
  };
  std::map<std::string, PerVerb, std::less<>> verbs;
  CounterChildren request_counts{requests, {"verb", "code"}};
  CounterChildren rejection_counts{rejections, {"reason"}};
  CounterChildren bind_counts{binds, {"result"}};
  CounterChildren answer_error_counts{answer_errors, {"verb", "cause"}};
  CounterChildren preemption_counts{preemption, {"outcome"}};
  std::shared_ptr<ClusterCollector> cluster;
  std::shared_ptr<UtilizationCollector> utilization;
  std::function<std::optional<DeletionCostStats>()> deletion_costs;
  std::function<ServerCounts()> server;
  std::unique_ptr<GroupMetrics> groups;
  std::shared_ptr<ProcessCollector> process = std::make_shared<ProcessCollector>();
};

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {
  for (const Verb v : kAllVerbs) {
    const std::string verb(verb_name(v));
    impl_->verbs[verb] = {&impl_->latency.Add({{"verb", verb}}, kLatencyBuckets),
                          &impl_->body.Add({{"verb", verb}}, kBodyBuckets),
                          &impl_->nodes.Add({{"verb", verb}}, kNodeBuckets)};
  }
  for (const char* result : {"success", "failure"}) impl_->reloads.Add({{"result", result}});
  for (const BindResult result : kBindResults) impl_->binds.Add({{"result", std::string(bind_result_name(result))}});
  for (const char* outcome : {"kept", "dropped"}) impl_->preemption.Add({{"outcome", outcome}});
  // Present from the start, so that rate() and the dashboard see a zero rather than no series.
  for (const AnswerError cause : kAnswerErrors)
    impl_->answer_errors.Add(
        {{"verb", std::string(verb_name(answer_error_verb(cause)))}, {"cause", std::string(answer_error_name(cause))}});
  impl_->build.Add({{"version", std::string(version())}, {"commit", std::string(git_commit())}}).Set(1);
}

Metrics::~Metrics() = default;

void Metrics::observe(std::string_view verb, int status, double seconds, size_t body_bytes, const VerbSummary& summary) {
  auto it = impl_->verbs.find(verb);
  if (it == impl_->verbs.end()) return;
  std::array<char, 16> code{};
  const auto written = std::to_chars(code.data(), code.data() + code.size(), status).ptr;
  impl_->request_counts.get({verb, std::string_view(code.data(), static_cast<size_t>(written - code.data()))}).Increment();
  it->second.latency->Observe(seconds);
  it->second.body->Observe(static_cast<double>(body_bytes));
  it->second.nodes->Observe(static_cast<double>(summary.nodes_in));
  for (const auto& [rule, count] : summary.rejections)
    impl_->rejection_counts.get({rule}).Increment(static_cast<double>(count));
  if (summary.bind_result != BindResult::kNone)
    impl_->bind_counts.get({bind_result_name(summary.bind_result)}).Increment();
  if (summary.shared_gpu_device >= 0) impl_->shared_gpu_binds.Increment();
  if (status == 200 && !summary.error.empty())
    impl_->answer_error_counts.get({verb, answer_error_name(summary.error_cause)}).Increment();
  if (verb == "preempt" && status == 200 && summary.error.empty()) {
    impl_->preemption_counts.get({"kept"}).Increment(static_cast<double>(summary.nodes_out));
    impl_->preemption_counts.get({"dropped"}).Increment(static_cast<double>(summary.nodes_in - summary.nodes_out));
  }
}

void Metrics::count_reload(bool ok) {
  impl_->reloads.Add({{"result", ok ? "success" : "failure"}}).Increment();
}

void Metrics::attach_server(std::function<ServerCounts()> counts) { impl_->server = std::move(counts); }

namespace {
std::vector<MetricFamily> server_families(const ServerCounts& c) {
  std::vector<MetricFamily> out;
  auto one = [&](const char* name, const char* help, MetricType type, double value,
                 std::vector<prometheus::ClientMetric::Label> labels = {}) {
    prometheus::ClientMetric m;
    m.label = std::move(labels);
    if (type == MetricType::Counter) m.counter.value = value;
    else m.gauge.value = value;
    if (!out.empty() && out.back().name == name) {
      out.back().metric.push_back(std::move(m));
      return;
    }
    out.push_back(MetricFamily{name, help, type, {std::move(m)}});
  };
  one("gpu_extender_http_threads", "Worker threads of the verb port; the pool grows one per open connection.",
      MetricType::Gauge, static_cast<double>(c.threads));
  const char* conn_help = "Connections of the verb port: busy (served by a thread), waiting (past --max-threads).";
  one("gpu_extender_http_connections", conn_help, MetricType::Gauge, static_cast<double>(c.busy), {{"state", "busy"}});
  one("gpu_extender_http_connections", conn_help, MetricType::Gauge, static_cast<double>(c.waiting), {{"state", "waiting"}});
  one("gpu_extender_bind_waits_total", "/filter and /prioritize requests that waited for the /bind of the pod before.",
      MetricType::Counter, static_cast<double>(c.binds.waits));
  one("gpu_extender_bind_wait_seconds_total", "Time /filter and /prioritize spent waiting for the previous pod's /bind.",
      MetricType::Counter, c.binds.waited_seconds);
  one("gpu_extender_bind_wait_timeouts_total",
      "Expected /bind requests that did not come within --bind-wait-ms (the pod failed elsewhere).",
      MetricType::Counter, static_cast<double>(c.binds.timeouts));
  const char* budget_help = "Memory budget for request bodies (--memory-budget-bytes), bytes: total and charged now.";
  one("gpu_extender_memory_budget_bytes", budget_help, MetricType::Gauge, static_cast<double>(c.budget_total),
      {{"state", "total"}});
  one("gpu_extender_memory_budget_bytes", budget_help, MetricType::Gauge, static_cast<double>(c.budget_in_use),
      {{"state", "in_use"}});
  one("gpu_extender_memory_budget_waits_total", "Requests that waited for the memory budget.", MetricType::Counter,
      static_cast<double>(c.budget_waits));
  one("gpu_extender_memory_budget_refusals_total", "Requests answered 503: the memory budget had no room in time.",
      MetricType::Counter, static_cast<double>(c.budget_refusals));
  return out;
}
}  // namespace

void Metrics::attach_cluster(std::shared_ptr<const ClusterView> view, std::shared_ptr<PlacementLedger> ledger,
                             std::function<std::vector<WatchCounts>()> watches) {
  impl_->groups = std::make_unique<GroupMetrics>(*impl_->registry, ledger);
  impl_->cluster = std::make_shared<ClusterCollector>(std::move(view), std::move(ledger), std::move(watches));
}

void Metrics::attach_utilization(std::shared_ptr<const GpuUtilizationSource> source) {
  impl_->utilization = std::make_shared<UtilizationCollector>(std::move(source));
}

void Metrics::attach_deletion_costs(std::function<std::optional<DeletionCostStats>()> stats) {
  impl_->deletion_costs = std::move(stats);
}

namespace {
std::vector<MetricFamily> deletion_cost_families(const DeletionCostStats& s) {
  auto sample = [](MetricType type, double value, std::vector<prometheus::ClientMetric::Label> labels = {}) {
    prometheus::ClientMetric m;
    m.label = std::move(labels);
    if (type == MetricType::Counter) m.counter.value = value;
    else m.gauge.value = value;
    return m;
  };
  MetricFamily leader{"gpu_extender_deletion_cost_leader",
                      "1 while this replica holds the Lease and writes pod deletion costs.", MetricType::Gauge,
                      {sample(MetricType::Gauge, s.leader ? 1 : 0)}};
  MetricFamily patches{"gpu_extender_deletion_cost_patches_total", "Pod deletion cost patches by outcome.",
                       MetricType::Counter,
                       {sample(MetricType::Counter, static_cast<double>(s.written), {{"outcome", "written"}}),
                        sample(MetricType::Counter, static_cast<double>(s.failed), {{"outcome", "failed"}})}};
  MetricFamily passes{"gpu_extender_deletion_cost_passes_total",
                      "Whole passes of the deletion-cost writer over the pods it keeps costs of, while leading.",
                      MetricType::Counter, {sample(MetricType::Counter, static_cast<double>(s.passes))}};
  MetricFamily pods{"gpu_extender_deletion_cost_pods",
                    "Pods whose deletion cost this extender keeps, by cost bucket (0: emptiest nodes), as of the last pass.",
                    MetricType::Gauge, {}};
  for (const auto& [bucket, n] : s.pods_by_bucket)
    pods.metric.push_back(sample(MetricType::Gauge, static_cast<double>(n), {{"bucket", std::to_string(bucket)}}));
  MetricFamily owned{"gpu_extender_deletion_cost_user_owned_pods",
                     "Pods this extender places whose deletion cost someone else set: left alone.", MetricType::Gauge,
                     {sample(MetricType::Gauge, static_cast<double>(s.user_owned))}};
  return {leader, patches, passes, pods, owned};
}
}  // namespace

std::string Metrics::render() const {
  std::vector<MetricFamily> families = impl_->registry->Collect();
  for (auto& f : impl_->process->Collect()) families.push_back(std::move(f));
  if (impl_->cluster)
    for (auto& f : impl_->cluster->Collect()) families.push_back(std::move(f));
  if (impl_->utilization)
    for (auto& f : impl_->utilization->Collect()) families.push_back(std::move(f));
  if (impl_->server)
    for (auto& f : server_families(impl_->server())) families.push_back(std::move(f));
  if (impl_->groups)
    for (auto& f : impl_->groups->collect()) families.push_back(std::move(f));
  if (impl_->deletion_costs)
    if (const auto stats = impl_->deletion_costs())
      for (auto& f : deletion_cost_families(*stats)) families.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace gpu_extender
