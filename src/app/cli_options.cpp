#include "app/cli_options.h"
#include "common/name_list.h"
#include "server/transport/memory_budget.h"

#include <charconv>
#include <functional>
#include <map>

namespace gpu_extender {
namespace {

template <typename T>
bool parse_number(const std::string& text, T& out, T min, T max) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) return false;
  out = value;
  return true;
}

}  // namespace

// One string literal: the help text as a user reads it (longer than a function should be; it is data).
std::string cli_usage() {
  return R"(Usage: gpu-extender [flags]
       gpu-extender explain [flags]    why each node passes or fails for one pod, how it scores
                                       (from the live cluster with --kubeconfig and --pod NS/NAME)
       gpu-extender simulate [flags]   place pods one after another on a cluster from files
       gpu-extender costs [flags]      the pod deletion cost each placed pod should have, and why
       gpu-extender probe URL          GET an http URL, exit 0 on 2xx (helm test; the image has no curl)
       gpu-extender COMMAND --help     a command's own flags

A GPU-aware kube-scheduler extender: POST /filter, /prioritize, /bind, /preempt.

Flags:
  --address ADDR         address to listen on (default 127.0.0.1; 0.0.0.0 in a pod)
  --port N               port to listen on (default 8888)
  --policy FILE          policy file, YAML or JSON (default: the embedded policy,
                         extender-config/policy.yaml)
  --pods-snapshot FILE   GPUs and custom resources in use, from `kubectl get pods -A -o json` (or -o yaml)
                         (default: usage unknown, treated as nothing in use)
  --log-level LEVEL      trace, debug, info, warn, error (default info)
  --log-format FORMAT    text or json (one JSON object per line) (default text)
  --metrics-port N       also serve /metrics, /healthz, /readyz on this plain-HTTP port
  --policy-reload-seconds N  check --policy for changes this often; a valid new policy
                         replaces the running one for new requests (default 2; 0: never)
  --shutdown-drain-seconds N after SIGTERM/SIGINT: /readyz 503 at once, serve N more seconds,
                         then stop accepting and finish in-flight requests (default 5)
  --max-body-bytes N     largest request body accepted, after chunked and gzip decoding, else
                         413 (default 100663296, 96 MiB: a 5,000-node full-mode request is
                         about 54 MB, 70 MB with managedFields)
  --memory-budget-bytes N  request bodies in flight are charged 6 bytes per body byte (the parser's
                         indexes, the answer) against this; a request that finds no room within
                         5 s gets 503 with Retry-After (default 671088640, 640 MiB: one largest
                         body, under the shipped 1 GiB limit)
  --threads N            request worker threads always running (default: two per core, at least 4)
  --max-threads N        the pool grows to this many threads, one per open connection, so that
                         binds, scrapes and idle clients never hold the thread a /filter needs
                         (default 256); connections beyond wait in the queue
  --read-timeout-seconds N  a client silent this long in the middle of a request is cut off,
                         freeing its worker (default 10)
  --header-timeout-seconds N  a request's line and headers (and a TLS handshake) must arrive
                         within N s of its first byte, else 408 (default 10)
  --request-timeout-seconds N  a whole request must arrive within N s of its first byte, however
                         steadily it trickles, else 408 (default 60)
  --max-header-bytes N   request line and headers together, else 431 (default 65536)
  --max-queued-connections N  connections allowed to wait for a worker; a request that finds more
                         waiting is answered 503 with Retry-After (default 64)
  --kubeconfig FILE      Kubernetes API from a kubeconfig (current-context); in a pod the
                         service account is used without any flag
  --kube-api-server URL  Kubernetes API server (https://host:port), with:
  --kube-token-file FILE   bearer token, re-read when it changes
  --kube-ca-file FILE      certificate authority of the API server
  --kube-insecure-skip-tls-verify   do not verify the API server's certificate (testing only)
  --kube-allow-token-over-http      send the bearer token to an http:// API server (refused
                         otherwise: anyone on the path could read it; testing only)
  --assume-ttl-seconds N how long a pod bound by /bind counts on its node before the watch
                         confirms it (default 30; kept while the pods' watch fails)
  --unready-after-seconds N  /readyz answers 503 once a watch has failed this long with nothing
                         heard from the API server: the view is stale (default 90)
  --group-ttl-seconds N  how long the room planned for a pod group stays held while none of its
                         members passes or binds (default 120; docs/pod-groups.md)
  --group-gate-ms N      a group member's /bind waits up to N ms for every other member to pass
                         the scheduler's filters, so that all of a group bind or none; keep it below
                         the scheduler's httpTimeout (shipped: 5s) (default 4000; 0: no gate)
  --no-group-preemption  never evict for a pod group: by default a group that fits nowhere and whose
                         members may preempt has room made in one domain by evicting pods of lower
                         priority through the Eviction API, by the replica holding the Lease below
                         (docs/pod-groups.md)
  --group-preemption-wait-seconds N  how long the room made for a group is held while its evicted
                         pods terminate (default 600)
  --scheduler-name NAME  /bind binds only pods with this spec.schedulerName; comma-separated
                         list (default gpu-scheduler, the shipped scheduler's name)
  --bind-wait-ms N       /prioritize of a pod (and /filter, where a pod in flight can change its
                         verdicts) waits up to N ms for the /bind of the pod scored just before
                         it, so that bursts are scored on the placements the scheduler has just
                         made (default 50; 0: never wait)
  --view-catch-up-ms N   a /filter about to refuse every node, some on usage, hurries a watch
                         resting between batches and judges again on each change it brings (a
                         victim's deletion the scheduler has already seen), for at most N ms
                         (default 20; 0: never wait)
  --prometheus-url URL   read live GPU utilisation for scorer gpuIdle from this Prometheus
                         (http(s)://host:port[/prefix]; the PromQL is the policy's
                         gpuUtilizationQuery, default the mean DCGM_FI_DEV_GPU_UTIL per node), with:
  --prometheus-token-file FILE  bearer token, re-read every query
  --prometheus-ca-file FILE     certificate authority of an https Prometheus
  --prometheus-period-seconds N query every N s, off the request path (default 15)
  --prometheus-stale-seconds N  a node's value older than N s is stale: gpuIdle falls back to the
                         annotation, else GPUs in use (default two periods)
  --deletion-costs       keep controller.kubernetes.io/pod-deletion-cost on the pods this extender
                         places, rising with how full their node is (the policy's deletionCost),
                         so scale-down empties nodes; one replica writes, elected on a Lease, with:
  --deletion-cost-qps N  at most N pod patches a second (default 5)
  --leader-elect-lease-duration-seconds N  a lease not renewed for N s may be taken (default 15)
  --leader-elect-renew-deadline-seconds N  the leader stops writing when it could not renew for
                         N s (default 10)
  --leader-elect-retry-period-seconds N    renew, or try to acquire, every N s (default 2)
  --leader-elect-namespace NS  the Lease's namespace (default: the pod's own)
  --leader-elect-lease-name NAME  (default gpu-extender-deletion-costs; group preemption's evictions
                         are made by the holder of the same Lease)
  --tls-cert-file FILE   serve HTTPS with this certificate (PEM), with:
  --tls-key-file FILE      its private key (PEM)
  --tls-client-ca-file FILE  answer only clients with a certificate from this CA (mutual TLS);
                         re-read when it changes, as the certificate is
  --tls-client-names NAMES  with --tls-client-ca-file: only certificates whose subject CN or a DNS
                         or URI SAN is one of these (comma-separated: the scheduler's), not every
                         certificate the CA signed
  --allow-unauthenticated-bind  serve /bind on a port that asks no client certificate, on an
                         address other than loopback (refused otherwise: whoever reaches the port
                         could bind pods); for a NetworkPolicy that admits only the scheduler
  --webhook-port N       serve the admission webhook POST /mutate-pods on port N over HTTPS (GPU
                         annotations written into pods as node affinity, for autoscalers)
  --webhook-tls-cert-file FILE, --webhook-tls-key-file FILE  its certificate and key (default: the
                         --tls-cert-file and --tls-key-file); no client certificate is asked
  --check-config         load the policy and usage source, print a summary, and exit
  --help                 print this help and exit
  --version              print the version and exit
)";
}

namespace {
using Setter = std::function<bool(const std::string&)>;

// Every flag that takes a value, with what it sets in `o` and whether the value is valid: one table.
std::map<std::string, Setter> flags_with_value(CliOptions& o) {
  return {
      {"--address", [&](const std::string& v) { o.server.address = v; return !v.empty(); }},
      {"--port", [&](const std::string& v) { return parse_number(v, o.server.port, 0, 65535); }},
      {"--policy", [&](const std::string& v) { o.policy_file = v; return !v.empty(); }},
      {"--pods-snapshot", [&](const std::string& v) { o.pods_snapshot_file = v; return !v.empty(); }},
      {"--log-level",
       [&](const std::string& v) {
         o.log_level = v;
         return v == "trace" || v == "debug" || v == "info" || v == "warn" || v == "error";
       }},
      {"--log-format", [&](const std::string& v) { o.log_format = v; return v == "text" || v == "json"; }},
      {"--metrics-port", [&](const std::string& v) { return parse_number(v, o.server.metrics_port, 1, 65535); }},
      {"--shutdown-drain-seconds", [&](const std::string& v) { return parse_number(v, o.shutdown_drain_seconds, 0, 300); }},
      {"--policy-reload-seconds", [&](const std::string& v) { return parse_number(v, o.policy_reload_seconds, 0, 3600); }},
      {"--max-body-bytes",
       [&](const std::string& v) { return parse_number<size_t>(v, o.server.max_body_bytes, 1024, size_t{1} << 34); }},
      {"--memory-budget-bytes",
       [&](const std::string& v) { return parse_number<size_t>(v, o.server.memory_budget_bytes, size_t{1} << 20, size_t{1} << 40); }},
      {"--threads", [&](const std::string& v) { return parse_number(v, o.server.threads, 1, 1024); }},
      {"--max-threads", [&](const std::string& v) { return parse_number(v, o.server.max_threads, 1, 4096); }},
      {"--bind-wait-ms", [&](const std::string& v) { return parse_number(v, o.bind_wait_ms, 0, 5000); }},
      {"--view-catch-up-ms", [&](const std::string& v) { return parse_number(v, o.view_catch_up_ms, 0, 1000); }},
      {"--prometheus-url",
       [&](const std::string& v) {
         o.prometheus_url = v;
         return v.rfind("http://", 0) == 0 || v.rfind("https://", 0) == 0;
       }},
      {"--prometheus-token-file", [&](const std::string& v) { o.prometheus_token_file = v; return !v.empty(); }},
      {"--prometheus-ca-file", [&](const std::string& v) { o.prometheus_ca_file = v; return !v.empty(); }},
      {"--prometheus-period-seconds",
       [&](const std::string& v) { return parse_number(v, o.prometheus_period_seconds, 1, 3600); }},
      {"--prometheus-stale-seconds",
       [&](const std::string& v) { return parse_number(v, o.prometheus_stale_seconds, 1, 86400); }},
      {"--scheduler-name",
       [&](const std::string& v) {
         auto names = split_names(v);
         if (names) o.scheduler_names = std::move(*names);
         return names.has_value();
       }},
      {"--read-timeout-seconds", [&](const std::string& v) { return parse_number(v, o.server.read_timeout_seconds, 1, 600); }},
      {"--header-timeout-seconds", [&](const std::string& v) { return parse_number(v, o.server.header_timeout_seconds, 1, 600); }},
      {"--request-timeout-seconds", [&](const std::string& v) { return parse_number(v, o.server.request_timeout_seconds, 1, 3600); }},
      {"--max-header-bytes",
       [&](const std::string& v) { return parse_number<size_t>(v, o.server.max_header_bytes, 1024, size_t{1} << 24); }},
      {"--max-queued-connections", [&](const std::string& v) { return parse_number(v, o.server.max_queued_connections, 0, 100000); }},
      {"--kubeconfig", [&](const std::string& v) { o.kubeconfig = v; return !v.empty(); }},
      {"--kube-api-server", [&](const std::string& v) { o.kube_api_server = v; return !v.empty(); }},
      {"--kube-token-file", [&](const std::string& v) { o.kube_token_file = v; return !v.empty(); }},
      {"--kube-ca-file", [&](const std::string& v) { o.kube_ca_file = v; return !v.empty(); }},
      {"--tls-cert-file", [&](const std::string& v) { o.server.tls_cert_file = v; return !v.empty(); }},
      {"--tls-key-file", [&](const std::string& v) { o.server.tls_key_file = v; return !v.empty(); }},
      {"--tls-client-ca-file", [&](const std::string& v) { o.server.tls_client_ca_file = v; return !v.empty(); }},
      {"--tls-client-names",
       [&](const std::string& v) {
         auto names = split_names(v);
         if (names) o.server.tls_client_names = std::move(*names);
         return names.has_value();
       }},
      {"--webhook-port", [&](const std::string& v) { return parse_number(v, o.server.webhook_port, 1, 65535); }},
      {"--webhook-tls-cert-file", [&](const std::string& v) { o.server.webhook_tls_cert_file = v; return !v.empty(); }},
      {"--webhook-tls-key-file", [&](const std::string& v) { o.server.webhook_tls_key_file = v; return !v.empty(); }},
      {"--assume-ttl-seconds", [&](const std::string& v) { return parse_number(v, o.assume_ttl_seconds, 1, 3600); }},
      {"--unready-after-seconds", [&](const std::string& v) { return parse_number(v, o.unready_after_seconds, 1, 86400); }},
      {"--group-ttl-seconds", [&](const std::string& v) { return parse_number(v, o.group_ttl_seconds, 1, 86400); }},
      {"--group-gate-ms", [&](const std::string& v) { return parse_number(v, o.group_gate_ms, 0, 60000); }},
      {"--group-preemption-wait-seconds",
       [&](const std::string& v) { return parse_number(v, o.group_preemption_wait_seconds, 1, 86400); }},
      {"--deletion-cost-qps", [&](const std::string& v) { return parse_number(v, o.deletion_cost_qps, 0.1, 1000.0); }},
      {"--leader-elect-lease-duration-seconds",
       [&](const std::string& v) { return parse_number(v, o.leader_elect_lease_duration_seconds, 1, 3600); }},
      {"--leader-elect-renew-deadline-seconds",
       [&](const std::string& v) { return parse_number(v, o.leader_elect_renew_deadline_seconds, 1, 3600); }},
      {"--leader-elect-retry-period-seconds",
       [&](const std::string& v) { return parse_number(v, o.leader_elect_retry_period_seconds, 1, 600); }},
      {"--leader-elect-namespace", [&](const std::string& v) { o.leader_elect_namespace = v; return !v.empty(); }},
      {"--leader-elect-lease-name", [&](const std::string& v) { o.leader_elect_lease_name = v; return !v.empty(); }},
  };
}

// Flags that go together or exclude each other: why `o` cannot work, or "".
std::string combination_problem(const CliOptions& o) {
  if (o.server.tls_cert_file.empty() != o.server.tls_key_file.empty()) return "--tls-cert-file and --tls-key-file go together";
  if (o.server.max_body_bytes > o.server.memory_budget_bytes / MemoryBudget::kBytesPerBodyByte)
    return "--memory-budget-bytes " + std::to_string(o.server.memory_budget_bytes) + " cannot hold one body of --max-body-bytes " +
           std::to_string(o.server.max_body_bytes) + ": it needs at least " + std::to_string(MemoryBudget::kBytesPerBodyByte) +
           " times as much";
  if (!o.server.tls_client_ca_file.empty() && o.server.tls_cert_file.empty())
    return "--tls-client-ca-file needs --tls-cert-file and --tls-key-file";
  if (!o.server.tls_client_names.empty() && o.server.tls_client_ca_file.empty())
    return "--tls-client-names needs --tls-client-ca-file (names are checked on certificates that CA signed)";
  if (o.server.webhook_tls_cert_file.empty() != o.server.webhook_tls_key_file.empty())
    return "--webhook-tls-cert-file and --webhook-tls-key-file go together";
  if (o.server.webhook_port > 0 && o.server.webhook_tls_cert_file.empty() && o.server.tls_cert_file.empty())
    return "--webhook-port needs a certificate: --webhook-tls-cert-file and --webhook-tls-key-file, or --tls-cert-file "
           "and --tls-key-file (the API server calls webhooks over HTTPS only)";
  // As client-go requires: a leader gives up before another may take the lease, and tries to renew
  // more than once before it gives up.
  if (o.leader_elect_lease_duration_seconds <= o.leader_elect_renew_deadline_seconds ||
      o.leader_elect_renew_deadline_seconds <= o.leader_elect_retry_period_seconds)
    return "--leader-elect-lease-duration-seconds must exceed --leader-elect-renew-deadline-seconds, which must "
           "exceed --leader-elect-retry-period-seconds";
  return "";
}
}  // namespace

CliParse parse_cli(const std::vector<std::string>& args) {
  CliOptions o;
  const std::map<std::string, Setter> with_value = flags_with_value(o);
  const std::map<std::string, bool*> switches = {
      {"--check-config", &o.check_config},
      {"--deletion-costs", &o.deletion_costs},
      {"--no-group-preemption", &o.no_group_preemption},
      {"--kube-insecure-skip-tls-verify", &o.kube_insecure_skip_tls_verify},
      {"--kube-allow-token-over-http", &o.kube_allow_token_over_http},
      {"--allow-unauthenticated-bind", &o.allow_unauthenticated_bind}, {"--help", &o.help}, {"-h", &o.help}, {"--version", &o.version}};

  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (auto sw = switches.find(flag); sw != switches.end() && !value) {
      *sw->second = true;
      continue;
    }
    auto setter = with_value.find(flag);
    if (setter == with_value.end()) return {std::nullopt, "unknown flag " + args[i] + " (see --help)"};
    if (!value) {
      if (i + 1 >= args.size()) return {std::nullopt, flag + " needs a value"};
      value = args[++i];
    }
    if (!setter->second(*value)) return {std::nullopt, "invalid value \"" + *value + "\" for " + flag};
  }
  if (std::string problem = combination_problem(o); !problem.empty()) return {std::nullopt, std::move(problem)};
  return {o, {}};
}

}  // namespace gpu_extender
