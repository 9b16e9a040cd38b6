#pragma once
// Command-line flags of the gpu-extender binary.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "server/transport/server_options.h"

namespace gpu_extender {

// Every flag. What the HTTP transport reads of them is one part, `server` (ServerOptions); the rest is
// read by the wiring (app/wiring.cpp), which hands each component only what it reads.
struct CliOptions {
  ServerOptions server;  // --address, --port, --metrics-port, limits, timeouts, TLS
  std::string policy_file;         // empty: embedded default
  std::string pods_snapshot_file;  // empty: usage unknown
  std::string log_level = "info";
  std::string log_format = "text";  // text | json
  int shutdown_drain_seconds = 5;   // after SIGTERM: unready, still serving, then stop accepting
  int policy_reload_seconds = 2;    // how often --policy is checked for changes; 0: never
  // Kubernetes API (see kube_config.h); none of them and not in a pod: no API.
  std::string kubeconfig;
  std::string kube_api_server;
  std::string kube_token_file;
  std::string kube_ca_file;
  bool kube_insecure_skip_tls_verify = false;
  bool kube_allow_token_over_http = false;
  bool allow_unauthenticated_bind = false;  // /bind on a port anyone who reaches it may call
  int assume_ttl_seconds = 30;
  int unready_after_seconds = 90;  // a watch failing this long makes /readyz 503
  int group_ttl_seconds = 120;  // room held for a pod group without progress
  int group_gate_ms = 4000;     // a group member's /bind waits this long for the rest of its group
  // Pods whose /bind this extender serves: their spec.schedulerName must be one of these.
  std::vector<std::string> scheduler_names{"gpu-scheduler"};
  // How long /filter and /prioritize of the next pod wait for the /bind of a pod just scored (the
  // scheduler binds asynchronously); 0: never wait.
  int bind_wait_ms = 50;
  int view_catch_up_ms = 20;
  // Live GPU utilisation from Prometheus (see gpu_utilization.h); empty url: none.
  std::string prometheus_url;
  std::string prometheus_token_file;
  std::string prometheus_ca_file;
  int prometheus_period_seconds = 15;
  int prometheus_stale_seconds = 0;  // 0: two periods
  // Pod deletion costs (deletion_cost.h), kept by the replica holding the lease.
  bool deletion_costs = false;
  bool no_group_preemption = false;       // groups never have room made by eviction
  int group_preemption_wait_seconds = 600;  // for the victims evicted for a group to leave
  double deletion_cost_qps = 5;
  int leader_elect_lease_duration_seconds = 15;
  int leader_elect_renew_deadline_seconds = 10;
  int leader_elect_retry_period_seconds = 2;
  std::string leader_elect_namespace;  // empty: the pod's own (POD_NAMESPACE, else the service account's)
  std::string leader_elect_lease_name = "gpu-extender-deletion-costs";
  bool check_config = false;       // load everything, print a summary, exit
  bool help = false;
  bool version = false;
};

struct CliParse {
  std::optional<CliOptions> options;
  std::string error;  // names the flag
};

CliParse parse_cli(const std::vector<std::string>& args);
std::string cli_usage();

}  // namespace gpu_extender
