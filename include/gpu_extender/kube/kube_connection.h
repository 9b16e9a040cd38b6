#pragma once
// Everything the extender does with the Kubernetes API, wired together: the API client, the cluster
// view fed by five reflectors (pods on nodes, nodes, DRA ResourceSlices, ResourceClaims and their
// templates), the placement ledger, the binder, and a housekeeping thread that ends what the ledger
// holds past its time, and logs when the view goes stale.
//
// Thread-safe: start() and stop() from the main thread; the rest is read by request threads.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gpu_extender/kube/binder.h"
#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/kube/kube_config.h"
#include "gpu_extender/state/placement_ledger.h"
#include "gpu_extender/policy/policy_holder.h"

namespace gpu_extender {

namespace kube {
class ApiClient;
class Reflector;
class LeaseElector;
class DeletionCostKeeper;
class GroupPreemptor;
}  // namespace kube

// Pod deletion costs (--deletion-costs): the Lease that elects the one writer, and the writer's pace.
struct DeletionCostSettings {
  std::string lease_namespace, lease_name, identity;
  std::chrono::milliseconds lease_duration{15000}, renew_deadline{10000}, retry_period{2000};
  double qps = 5;
  std::vector<std::string> scheduler_names;
};

struct DeletionCostStats {
  bool leader = false;
  uint64_t written = 0, failed = 0;
  uint64_t passes = 0;  // whole passes over the pods while leading
  std::map<int, size_t> pods_by_bucket;
  size_t user_owned = 0;
};

// Counts of one reflector (list+watch of one resource), read at scrape time.
struct WatchCounts {
  std::string resource;  // "pods" | "nodes" | "resourceslices" | "resourceclaims" | "resourceclaimtemplates"
  uint64_t lists = 0, watches = 0, events = 0, relists_after_gone = 0, failures = 0, not_understood = 0;
};

struct KubeOptions {
  LedgerOptions ledger;
  std::chrono::seconds watch_timeout{300};
  std::chrono::seconds stale_after{120};  // no event or bookmark for this long: log that the view is stale
  // A watch failing this long with nothing heard from the API server: the view is stale and /readyz
  // says so (503). Above the API server's bookmark period (one a minute to an idle watch) and the
  // reflectors' longest backoff (30 s), so one missed bookmark or one backoff never flaps readiness.
  std::chrono::seconds unready_after{90};
};

class KubeConnection {
 public:
  KubeConnection(ApiEndpoint endpoint, const ViewSchema& schema, KubeOptions options = {});
  ~KubeConnection();

  void start();
  void stop();

  std::shared_ptr<ClusterView> view() const { return view_; }
  std::shared_ptr<Binder> binder() const { return binder_; }
  std::shared_ptr<PlacementLedger> ledger() const { return ledger_; }
  const ApiEndpoint& endpoint() const;
  // Counters of the reflectors, for /metrics.
  std::vector<WatchCounts> watch_counts() const;
  // Why the view is stale ("" while it is not): the watches failing past KubeOptions::unready_after.
  std::string staleness() const;
  // Keep pod deletion costs, once started, with the policy `policy()` returns at each pass. Before start().
  void keep_deletion_costs(const DeletionCostSettings& settings, std::shared_ptr<const PolicyHolder> policies);
  std::optional<DeletionCostStats> deletion_cost_stats() const;  // nullopt when costs are not kept
  // Make room for pod groups that fit nowhere by evicting pods of lower priority (kube/group_preemptor.h),
  // once started, only while holding the writers' lease (`lease`: the one deletion costs hold, made here
  // when they do not run), so that one replica of several evicts. `instance` reports the events.
  void preempt_for_groups(std::shared_ptr<const PolicyHolder> policies, const std::string& instance,
                          const DeletionCostSettings& lease);

 private:
  // The lease that elects the one replica writing beyond binds (deletion costs, evictions), made once.
  void elect_writer(const DeletionCostSettings& settings);
  std::shared_ptr<kube::ApiClient> api_;
  std::shared_ptr<ClusterView> view_;
  std::shared_ptr<Binder> binder_;
  std::shared_ptr<PlacementLedger> ledger_;
  std::vector<std::unique_ptr<kube::Reflector>> reflectors_;
  const kube::Reflector* pods_reflector_ = nullptr;  // one of reflectors_: what confirms assumed pods
  std::unique_ptr<kube::LeaseElector> elector_;
  std::unique_ptr<kube::DeletionCostKeeper> cost_keeper_;
  std::unique_ptr<kube::GroupPreemptor> group_preemptor_;
  std::vector<std::thread> threads_;
  KubeOptions options_;
  std::atomic<bool> stopping_{false};
};

}  // namespace gpu_extender
