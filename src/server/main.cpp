// gpu-extender: wires the flags, the policy, the usage source and the HTTP server together.
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <pthread.h>
#include <random>
#include <thread>
#include <unistd.h>

#include "gpu_extender/build_info.h"
#include "gpu_extender/cli_options.h"
#include "gpu_extender/gpu_utilization.h"
#include "gpu_extender/http_service.h"
#include "gpu_extender/kube_connection.h"
#include "gpu_extender/tools.h"
#include "policy_watcher.h"
#include "logging.h"

using namespace gpu_extender;

namespace {

std::shared_ptr<const Policy> load_policy(const CliOptions& options) {
  PolicyConfig config = options.policy_file.empty() ? default_policy_config() : load_policy_file(options.policy_file);
  return Policy::build(std::move(config));
}

std::optional<ApiEndpoint> api_endpoint(const CliOptions& o) {
  return resolve_endpoint(KubeFlags{o.kubeconfig, o.kube_api_server, o.kube_token_file, o.kube_ca_file,
                                    o.kube_insecure_skip_tls_verify, o.kube_allow_token_over_http});
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
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "_%08x", random());
  s.identity = std::string(host) + suffix;
  s.lease_duration = std::chrono::seconds(o.leader_elect_lease_duration_seconds);
  s.renew_deadline = std::chrono::seconds(o.leader_elect_renew_deadline_seconds);
  s.retry_period = std::chrono::seconds(o.leader_elect_retry_period_seconds);
  s.qps = o.deletion_cost_qps;
  s.scheduler_names = o.scheduler_names;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "explain")
    return run_explain(std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr);
  if (argc > 1 && std::string(argv[1]) == "simulate")
    return run_simulate(std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr);
  if (argc > 1 && std::string(argv[1]) == "costs")
    return run_costs(std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr);
  const CliParse parsed = parse_cli(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.options) {
    std::cerr << "gpu-extender: " << parsed.error << "\n";
    return 2;
  }
  const CliOptions& options = *parsed.options;
  if (options.help) {
    std::cout << cli_usage();
    return 0;
  }
  if (options.version) {
    std::cout << "gpu-extender " << version() << " (commit " << git_commit() << ")\n";
    return 0;
  }

  // glibc gives every thread that allocates its own malloc arena; under many concurrent connections
  // their fragmentation made resident memory creep (31 -> 47 MiB in 30 s at concurrency 64, flat at
  // ~32 MiB with one arena). The hot path reuses its buffers, so two arenas cost no measurable speed.
  mallopt(M_ARENA_MAX, 2);

  // Signals are taken by one thread with sigwait; block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A client that goes away while its answer is written (OpenSSL writes without MSG_NOSIGNAL) must
  // cost that connection, not the process.
  std::signal(SIGPIPE, SIG_IGN);

  configure_logging(options.log_level, options.log_format);
  ServiceParts parts;
  parts.scheduler_names = options.scheduler_names;
  parts.bind_wait = std::chrono::milliseconds(options.bind_wait_ms);
  std::unique_ptr<KubeConnection> kube;
  try {
    parts.policy = load_policy(options);
    if (auto endpoint = api_endpoint(options)) {
      if (!options.pods_snapshot_file.empty())
        throw std::runtime_error("--pods-snapshot and Kubernetes API access exclude each other: the watch is the usage");
      KubeOptions kube_options;
      kube_options.assume_ttl = std::chrono::seconds(options.assume_ttl_seconds);
      kube = std::make_unique<KubeConnection>(std::move(*endpoint), parts.policy->schema(), kube_options);
      parts.cluster = kube->view();
      parts.binder = kube->binder();
      spdlog::info("Kubernetes API: {}", kube->endpoint().source);
    } else if (!options.pods_snapshot_file.empty()) {
      parts.usage = PodsSnapshotUsage::load(options.pods_snapshot_file, parts.policy->schema());
    } else {
      spdlog::warn("no Kubernetes API configured (not in a pod, no --kubeconfig): usage is unknown and treated as "
                   "nothing in use; names mode, /bind and /preempt answer an Error");
    }
  } catch (const std::exception& e) {
    std::cerr << "gpu-extender: " << e.what() << "\n";
    return 2;
  }
  std::shared_ptr<GpuUtilizationSource> utilization;
  auto current_service = std::make_shared<std::weak_ptr<const ExtenderService>>();
  if (!options.prometheus_url.empty()) {
    GpuUtilizationSource::Options u;
    u.url = options.prometheus_url;
    u.token_file = options.prometheus_token_file;
    u.ca_file = options.prometheus_ca_file;
    u.period = std::chrono::seconds(options.prometheus_period_seconds);
    u.stale_after = std::chrono::seconds(options.prometheus_stale_seconds > 0 ? options.prometheus_stale_seconds
                                                                               : 2 * options.prometheus_period_seconds);
    u.timeout = std::min<std::chrono::milliseconds>(std::chrono::seconds(5), u.period);
    // The query is read from the policy in force at each period, so a reload changes it. The service
    // is made below; the poller starts after it is.
    utilization = std::make_shared<GpuUtilizationSource>(u, [current = current_service] {
      return current->lock()->policy()->config().gpu_utilization_query;
    });
    parts.utilization = utilization;
    spdlog::info("GPU utilisation: {} every {}s, stale after {}s", options.prometheus_url,
                 options.prometheus_period_seconds, std::chrono::duration_cast<std::chrono::seconds>(u.stale_after).count());
  }
  const Policy& policy = *parts.policy;
  spdlog::info("policy: {}; filters: {}; scorers: {}", policy.config().source, policy.config().filters.size(),
               policy.config().scorers.size());
  auto service = std::make_shared<const ExtenderService>(parts);
  *current_service = service;
  if (options.deletion_costs) {
    if (!kube) {
      std::cerr << "gpu-extender: --deletion-costs needs Kubernetes API access (it watches and patches pods)\n";
      return 2;
    }
    kube->keep_deletion_costs(deletion_cost_settings(options), [s = service] { return s->policy(); });
    spdlog::info("deletion costs: kept by the holder of lease {}, at most {} patches/s",
                 options.leader_elect_lease_name, options.deletion_cost_qps);
  }
  std::unique_ptr<HttpService> http;
  std::shared_ptr<Metrics> metrics;
  try {
    metrics = std::make_shared<Metrics>();
    if (kube) metrics->attach_cluster(kube->view(), [k = kube.get()] { return k->watch_counts(); });
    if (utilization) metrics->attach_utilization(utilization);
    if (kube) metrics->attach_deletion_costs([k = kube.get()] { return k->deletion_cost_stats(); });
    http = std::make_unique<HttpService>(service, options, metrics);
  } catch (const std::exception& e) {
    std::cerr << "gpu-extender: " << e.what() << "\n";
    return 2;
  }
  spdlog::info("usage source: {}", service->usage().describe());
  if (options.check_config) {
    std::cout << "configuration ok: policy " << policy.config().source << ", usage " << service->usage().describe()
              << "\n";
    return 0;
  }
  if (kube) kube->start();
  if (utilization) utilization->start();
  std::unique_ptr<PolicyWatcher> policy_watcher;
  if (!options.policy_file.empty() && options.policy_reload_seconds > 0)
    policy_watcher = std::make_unique<PolicyWatcher>(options.policy_file, service, metrics,
                                                      std::chrono::seconds(options.policy_reload_seconds));
  std::string error;
  if (!http->bind(error)) {
    spdlog::error("{}", error);
    return 1;
  }
  std::atomic<bool> serving{true};
  std::thread signal_waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    if (!serving) return;  // serve() ended on its own
    // Graceful stop: report unready at once so endpoints drop this replica, keep serving what still
    // arrives during the drain period, then stop accepting; in-flight requests finish before exit.
    service->begin_draining();
    spdlog::info("received {}: unready now, draining for {}s, then stopping", signal == SIGTERM ? "SIGTERM" : "SIGINT",
                 options.shutdown_drain_seconds);
    sigset_t again;
    sigemptyset(&again);
    sigaddset(&again, SIGTERM);
    sigaddset(&again, SIGINT);
    const timespec drain{options.shutdown_drain_seconds, 0};
    sigtimedwait(&again, nullptr, &drain);  // a second signal cuts the drain short
    http->stop();
  });
  spdlog::info("gpu-extender {} listening on {}://{}:{}{}", version(), options.tls_cert_file.empty() ? "http" : "https",
               options.address, http->port(), options.tls_client_ca_file.empty() ? "" : " (client certificates required)");
  const bool ok = http->serve();
  serving = false;
  // serve() may return without a signal (a listen failure): send ourselves one so the waiter exits.
  // SIGTERM is blocked in every thread, so it only reaches the waiter's sigwait.
  kill(getpid(), SIGTERM);
  signal_waiter.join();
  if (utilization) utilization->stop();
  if (kube) kube->stop();
  spdlog::info("stopped");
  return ok ? 0 : 1;
}
