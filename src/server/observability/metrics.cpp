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
#include "server/observability/metric_table.h"
#include "server/observability/process_metrics.h"

namespace gpu_extender {
namespace {

using prometheus::MetricFamily;

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
    auto gauge = [&](Metric id, double value) { out.push_back(single(id, value)); };
    gauge(Metric::kClusterNodes, static_cast<double>(s.nodes));
    gauge(Metric::kClusterPods, static_cast<double>(s.pods));
    gauge(Metric::kClusterAssumedPods, static_cast<double>(in_flight.assumed));
    const ClusterView::SharedGpuStats shared = view_->shared_gpu_stats(ledger_->smallest_pending_shared_gpu_memory());
    gauge(Metric::kSharedGpuDevices, static_cast<double>(shared.devices));
    gauge(Metric::kSharedGpuFreeMemory, static_cast<double>(shared.free));
    gauge(Metric::kSharedGpuFragmentedMemory, static_cast<double>(shared.fragmented));
    const DraStats dra = view_->dra_stats();
    gauge(Metric::kDraNodes, static_cast<double>(dra.nodes));
    gauge(Metric::kDraGpus, static_cast<double>(dra.gpus));
    gauge(Metric::kDraClaims, static_cast<double>(dra.claims));
    gauge(Metric::kDraHeldGpus, static_cast<double>(dra.held_gpus));
    gauge(Metric::kDraUnavailableGpus, static_cast<double>(dra.unavailable_gpus));
    gauge(Metric::kClusterSynced, view_->ready() ? 1 : 0);
    gauge(Metric::kClusterLastEventAgeSeconds, s.seconds_since_event);
    MetricFamily lists = family(Metric::kWatchListsTotal);
    MetricFamily restarts = family(Metric::kWatchRestartsTotal);
    MetricFamily events = family(Metric::kWatchEventsTotal);
    MetricFamily not_understood = family(Metric::kWatchObjectsNotUnderstoodTotal);
    for (const WatchCounts& w : watches_()) {
      const auto add = add_sample;
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
    return {single(Metric::kGpuUtilizationRefreshAgeSeconds, s.seconds_since_success),
            single(Metric::kGpuUtilizationQueryErrorsTotal, static_cast<double>(s.errors)),
            single(Metric::kGpuUtilizationNodes, static_cast<double>(s.nodes))};
  }

 private:
  std::shared_ptr<const GpuUtilizationSource> source_;
};

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& requests = counter_family(*registry, Metric::kRequestsTotal);
  prometheus::Family<prometheus::Histogram>& latency = histogram_family(*registry, Metric::kRequestDurationSeconds);
  prometheus::Family<prometheus::Histogram>& body = histogram_family(*registry, Metric::kRequestBodyBytes);
  prometheus::Family<prometheus::Histogram>& nodes = histogram_family(*registry, Metric::kRequestNodes);
  prometheus::Family<prometheus::Counter>& rejections = counter_family(*registry, Metric::kFilterRejectionsTotal);
  prometheus::Family<prometheus::Counter>& answer_errors = counter_family(*registry, Metric::kAnswerErrorsTotal);
  prometheus::Family<prometheus::Counter>& binds = counter_family(*registry, Metric::kBindsTotal);
  prometheus::Counter& shared_gpu_binds = counter_family(*registry, Metric::kSharedGpuBindsTotal)
                                              .Add({});
  prometheus::Family<prometheus::Counter>& preemption = counter_family(*registry, Metric::kPreemptionCandidatesTotal);
  prometheus::Family<prometheus::Counter>& reloads = counter_family(*registry, Metric::kConfigReloadsTotal);
  prometheus::Family<prometheus::Gauge>& build = gauge_family(*registry, Metric::kBuildInfo);

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
  // A sample of `id`: to the family before when it is the same metric (another label value).
  auto one = [&](Metric id, double value, std::vector<prometheus::ClientMetric::Label> labels = {}) {
    if (out.empty() || out.back().name != spec(id).name) out.push_back(family(id));
    add_sample(out.back(), value, std::move(labels));
  };
  one(Metric::kHttpThreads, static_cast<double>(c.threads));
  one(Metric::kHttpConnections, static_cast<double>(c.busy), {{"state", "busy"}});
  one(Metric::kHttpConnections, static_cast<double>(c.waiting), {{"state", "waiting"}});
  one(Metric::kBindWaitsTotal, static_cast<double>(c.binds.waits));
  one(Metric::kBindWaitSecondsTotal, c.binds.waited_seconds);
  one(Metric::kBindWaitTimeoutsTotal, static_cast<double>(c.binds.timeouts));
  one(Metric::kMemoryBudgetBytes, static_cast<double>(c.budget_total),
      {{"state", "total"}});
  one(Metric::kMemoryBudgetBytes, static_cast<double>(c.budget_in_use),
      {{"state", "in_use"}});
  one(Metric::kMemoryBudgetWaitsTotal, static_cast<double>(c.budget_waits));
  one(Metric::kMemoryBudgetRefusalsTotal, static_cast<double>(c.budget_refusals));
  for (const ServerCounts::Certificate& cert : c.certificates)
    one(Metric::kTlsCertificateExpiry, cert.not_after, {{"port", cert.port}, {"certificate", cert.certificate}});
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
  MetricFamily patches = family(Metric::kDeletionCostPatchesTotal);
  add_sample(patches, static_cast<double>(s.written), {{"outcome", "written"}});
  add_sample(patches, static_cast<double>(s.failed), {{"outcome", "failed"}});
  MetricFamily pods = family(Metric::kDeletionCostPods);
  for (const auto& [bucket, n] : s.pods_by_bucket) add_sample(pods, static_cast<double>(n), {{"bucket", std::to_string(bucket)}});
  return {single(Metric::kDeletionCostLeader, s.leader ? 1 : 0), patches,
          single(Metric::kDeletionCostPassesTotal, static_cast<double>(s.passes)), pods,
          single(Metric::kDeletionCostUserOwnedPods, static_cast<double>(s.user_owned))};
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
