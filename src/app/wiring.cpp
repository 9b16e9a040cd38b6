#include "wiring.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

namespace gpu_extender {
namespace {

std::shared_ptr<const Policy> load_policy(const CliOptions& options) {
  PolicyConfig config = options.policy_file.empty() ? default_policy_config() : load_policy_file(options.policy_file);
  return Policy::build(std::move(config));
}

std::optional<ApiEndpoint> api_endpoint(const CliOptions& o) {
  return resolve_endpoint(KubeFlags{o.kubeconfig, o.kube_api_server, o.kube_token_file, o.kube_ca_file,
                                    o.kube_insecure_skip_tls_verify, o.kube_allow_token_over_http});
}

// This host's name (a pod's name in Kubernetes): who holds a lease, who reports an event.
std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// The Lease in the pod's own namespace (the downward API's POD_NAMESPACE, else the service account's),
// held under a name unique to this process: the pod's name and a random suffix, as client-go does.
DeletionCostSettings deletion_cost_settings(const CliOptions& o) {
  DeletionCostSettings s;
  s.lease_namespace = o.leader_elect_namespace;
  if (s.lease_namespace.empty())
    if (const char* ns = std::getenv("POD_NAMESPACE")) s.lease_namespace = ns;
  if (s.lease_namespace.empty()) {
    std::ifstream file("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
    std::getline(file, s.lease_namespace);
  }
  if (s.lease_namespace.empty()) s.lease_namespace = "gpu-extender";
  s.lease_name = o.leader_elect_lease_name;
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "_%08x", random());
  s.identity = host_name() + suffix;
  s.lease_duration = std::chrono::seconds(o.leader_elect_lease_duration_seconds);
  s.renew_deadline = std::chrono::seconds(o.leader_elect_renew_deadline_seconds);
  s.retry_period = std::chrono::seconds(o.leader_elect_retry_period_seconds);
  s.qps = o.deletion_cost_qps;
  s.scheduler_names = o.scheduler_names;
  return s;
}

GpuUtilizationSource::Options utilization_options(const CliOptions& o) {
  GpuUtilizationSource::Options u;
  u.url = o.prometheus_url;
  u.token_file = o.prometheus_token_file;
  u.ca_file = o.prometheus_ca_file;
  u.period = std::chrono::seconds(o.prometheus_period_seconds);
  u.stale_after =
      std::chrono::seconds(o.prometheus_stale_seconds > 0 ? o.prometheus_stale_seconds : 2 * o.prometheus_period_seconds);
  u.timeout = std::min<std::chrono::milliseconds>(std::chrono::seconds(5), u.period);
  return u;
}

// Where usage comes from: the API watch (which also gives names mode, /bind and /preempt), a pods
// snapshot file, or nothing.
std::unique_ptr<KubeConnection> connect_usage(const CliOptions& options, const Policy& policy, ServiceParts& parts) {
  if (auto endpoint = api_endpoint(options)) {
    if (!options.pods_snapshot_file.empty())
      throw ConfigurationError("--pods-snapshot and Kubernetes API access exclude each other: the watch is the usage");
    KubeOptions kube_options;
    kube_options.ledger.assume_ttl = std::chrono::seconds(options.assume_ttl_seconds);
    kube_options.unready_after = std::chrono::seconds(options.unready_after_seconds);
    kube_options.ledger.group_ttl = std::chrono::seconds(options.group_ttl_seconds);
    kube_options.ledger.group_gate = std::chrono::milliseconds(options.group_gate_ms);
    kube_options.ledger.group_preemption = !options.no_group_preemption;
    kube_options.ledger.group_preemption_wait = std::chrono::seconds(options.group_preemption_wait_seconds);
    auto kube = std::make_unique<KubeConnection>(std::move(*endpoint), policy.schema(), kube_options);
    parts.cluster = kube->view();
    parts.binder = kube->binder();
    parts.ledger = kube->ledger();
    spdlog::info("Kubernetes API: {}", kube->endpoint().source);
    return kube;
  }
  if (!options.pods_snapshot_file.empty()) {
    parts.usage = PodsSnapshotUsage::load(options.pods_snapshot_file, policy.schema());
  } else {
    spdlog::warn("no Kubernetes API configured (not in a pod, no --kubeconfig): usage is unknown and treated as "
                 "nothing in use; names mode, /bind and /preempt answer an Error");
  }
  return nullptr;
}

// Why /bind must not be served ("" when it may): the verbs' port asks no client certificate and
// listens where more than this host reaches it, and no flag says that is meant. Binding is the one verb
// that writes to the cluster: whoever could call it could place any pending pod of the scheduler's.
std::string bind_refusal(const CliOptions& o) {
  if (o.allow_unauthenticated_bind || !o.server.tls_client_ca_file.empty()) return "";
  const std::string& a = o.server.address;
  if (a.rfind("127.", 0) == 0 || a == "::1" || a == "localhost") return "";
  return "the verbs' port asks no client certificate on --address " + a +
         ", so whoever reaches it could bind pods: serve mutual TLS (--tls-client-ca-file, the chart's "
         "tls.enabled) or pass --allow-unauthenticated-bind where only the scheduler can reach the port";
}

}  // namespace

Wiring::Wiring(const CliOptions& options) : options_(options), policies_(std::make_shared<PolicyHolder>(load_policy(options))) {
  ServiceParts parts;
  parts.policies = policies_;
  parts.scheduler_names = options.scheduler_names;
  parts.bind_wait = std::chrono::milliseconds(options.bind_wait_ms);
  parts.view_catch_up = std::chrono::milliseconds(options.view_catch_up_ms);
  const std::shared_ptr<const Policy> policy = policies_->current();
  kube_ = connect_usage(options, *policy, parts);
  if (kube_) parts.staleness = [k = kube_.get()] { return k->staleness(); };
  if (parts.binder) {
    parts.bind_refusal = bind_refusal(options);
    if (!parts.bind_refusal.empty()) spdlog::warn("/bind is refused: {}", parts.bind_refusal);
  }
  if (!options.prometheus_url.empty()) {
    // The query is read from the policy in force at each period, so a reload changes it.
    const GpuUtilizationSource::Options u = utilization_options(options);
    utilization_ = std::make_shared<GpuUtilizationSource>(
        u, [p = policies_] { return p->current()->config().gpu_utilization_query; });
    parts.utilization = utilization_;
    spdlog::info("GPU utilisation: {} every {}s, stale after {}s", options.prometheus_url,
                 options.prometheus_period_seconds,
                 std::chrono::duration_cast<std::chrono::seconds>(u.stale_after).count());
  }
  spdlog::info("policy: {}; filters: {}; scorers: {}", policy->config().source, policy->config().filters.size(),
               policy->config().scorers.size());
  service_ = std::make_shared<const ExtenderService>(std::move(parts));
  const DeletionCostSettings writers_lease = deletion_cost_settings(options);  // one lease for every writer
  if (options.deletion_costs) {
    if (!kube_) throw ConfigurationError("--deletion-costs needs Kubernetes API access (it watches and patches pods)");
    kube_->keep_deletion_costs(writers_lease, policies_);
    spdlog::info("deletion costs: kept by the holder of lease {}, at most {} patches/s", options.leader_elect_lease_name,
                 options.deletion_cost_qps);
  }
  if (kube_ && !options.no_group_preemption)
    kube_->preempt_for_groups(policies_, host_name(), writers_lease);
  metrics_ = std::make_shared<Metrics>();
  if (kube_) {
    metrics_->attach_cluster(kube_->view(), kube_->ledger(), [k = kube_.get()] { return k->watch_counts(); });
    metrics_->attach_deletion_costs([k = kube_.get()] { return k->deletion_cost_stats(); });
  }
  if (utilization_) metrics_->attach_utilization(utilization_);
  http_ = std::make_unique<HttpService>(service_, options.server, metrics_);
  spdlog::info("usage source: {}", service_->usage().describe());
}

Wiring::~Wiring() = default;

void Wiring::start() {
  if (kube_) kube_->start();
  if (utilization_) utilization_->start();
  if (!options_.policy_file.empty() && options_.policy_reload_seconds > 0)
    policy_watcher_ = std::make_unique<PolicyWatcher>(options_.policy_file, policies_, metrics_,
                                                      std::chrono::seconds(options_.policy_reload_seconds));
}

void Wiring::stop() {
  policy_watcher_.reset();
  if (utilization_) utilization_->stop();
  if (kube_) kube_->stop();
}

}  // namespace gpu_extender
