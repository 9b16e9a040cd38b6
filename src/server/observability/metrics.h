#pragma once
// Prometheus metrics of the extender, in the text format, served at /metrics. All names start with
// gpu_extender_; counters end in _total; times in seconds, sizes in bytes. Label values are bounded:
// verbs, status codes, rule names, results; never a pod or a node name.
//
// Thread-safe: request threads record concurrently; render() may run at any time (a scrape).
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/server/extender_service.h"
#include "gpu_extender/usage/gpu_utilization.h"
#include "gpu_extender/kube/kube_connection.h"
#include "gpu_extender/state/placement_ledger.h"

namespace prometheus {
class Registry;
}

namespace gpu_extender {

// The HTTP server's connection threads and the ledger's bind waits, read at each scrape.
struct ServerCounts {
  size_t threads = 0;  // worker threads alive (the pool grows one per open connection)
  size_t busy = 0;     // serving a connection (a request, or a kept-alive wait for the next)
  size_t waiting = 0;  // accepted connections waiting for a thread (past --max-threads)
  BindWaitStats binds;
  size_t budget_total = 0, budget_in_use = 0, budget_waits = 0, budget_refusals = 0;  // MemoryBudget
  // The certificates the TLS listeners serve and trust: which port ("verbs", "webhook"), which one
  // ("serving", "client-ca": the bundle's earliest to expire), and its notAfter in Unix seconds.
  struct Certificate {
    std::string port, certificate;
    double not_after = 0;
  };
  std::vector<Certificate> certificates;
};

class Metrics {
 public:
  Metrics();
  ~Metrics();

  // One request of `verb` ("filter", ...), its status, duration, body size, and what the verb did.
  void observe(std::string_view verb, int status, double seconds, size_t body_bytes, const VerbSummary& summary);
  void count_reload(bool ok);
  // Cluster-view and placement-ledger gauges, watch counters, and gpu_extender_group* (pod groups,
  // group_metrics.h), read at each scrape.
  void attach_cluster(std::shared_ptr<const ClusterView> view, std::shared_ptr<PlacementLedger> ledger,
                      std::function<std::vector<WatchCounts>()> watches);
  // gpu_extender_gpu_utilization_*: the age of the last good Prometheus answer, query errors, nodes.
  void attach_utilization(std::shared_ptr<const GpuUtilizationSource> source);
  // gpu_extender_deletion_cost_*: leader or not, patches by outcome, pods by cost bucket.
  void attach_deletion_costs(std::function<std::optional<DeletionCostStats>()> stats);
  // Server gauges; `counts` is called at each scrape, from the scraping thread.
  void attach_server(std::function<ServerCounts()> counts);

  std::string render() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpu_extender
