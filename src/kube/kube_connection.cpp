#include "gpu_extender/kube/kube_connection.h"
#include "common/thread_name.h"

#include <spdlog/spdlog.h>

#include "api_binder.h"
#include "gpu_extender/kube/api_client.h"
#include "deletion_cost_keeper.h"
#include "api_evictor.h"
#include "group_preemptor.h"
#include "lease_elector.h"
#include "reflector.h"

namespace gpu_extender {

KubeConnection::KubeConnection(ApiEndpoint endpoint, const ViewSchema& schema, KubeOptions options)
    : api_(std::make_shared<kube::ApiClient>(std::move(endpoint))),
      view_(std::make_shared<ClusterView>()),
      binder_(std::make_shared<kube::ApiBinder>(api_, schema)),
      ledger_(std::make_shared<PlacementLedger>(view_, options.ledger)),
      options_(options) {
  kube::ReflectorOptions reflector_options;
  reflector_options.watch_timeout = options.watch_timeout;
  reflector_options.idle_timeout = std::chrono::milliseconds(options.watch_timeout) + std::chrono::seconds(60);
  auto add = [&](kube::Watched kind) {
    reflectors_.push_back(
        std::make_unique<kube::Reflector>(kind, api_, kube::WatchTarget{view_, ledger_, schema, {}}, reflector_options));
    return reflectors_.back().get();
  };
  add(kube::Watched::kNodes);
  kube::Reflector* pods = add(kube::Watched::kPods);
  pods_reflector_ = pods;
  add(kube::Watched::kResourceSlices);
  add(kube::Watched::kDeviceTaintRules);
  // Pods are listed after claims and templates (a bound pod counts what its claims ask), but never held
  // back long by them: a slow DRA list costs the pods' view at most this.
  constexpr std::chrono::seconds kClaimsFirst{10};
  pods->list_after(add(kube::Watched::kResourceClaims), kClaimsFirst);
  pods->list_after(add(kube::Watched::kResourceClaimTemplates), kClaimsFirst);
  view_->set_watch_hurry([api = api_] { return api->hurry_watches(); });
}

KubeConnection::~KubeConnection() { stop(); }

const ApiEndpoint& KubeConnection::endpoint() const { return api_->endpoint(); }

std::vector<WatchCounts> KubeConnection::watch_counts() const {
  std::vector<WatchCounts> out;
  for (const auto& r : reflectors_) {
    const auto& c = r->counters();
    out.push_back({r->name(), c.lists, c.watches, c.events, c.relists_after_gone, c.failures, c.not_understood});
  }
  return out;
}

std::string KubeConnection::staleness() const {
  std::string why;
  for (const auto& r : reflectors_) {
    const auto failing = std::chrono::duration_cast<std::chrono::seconds>(r->failing_for());
    if (failing < options_.unready_after) continue;
    why += std::string(why.empty() ? "" : ", ") + r->name() + " for " + std::to_string(failing.count()) + " s";
  }
  if (why.empty()) return why;
  return "the cluster view is stale: watches failing (" + why + "; the bound is " +
         std::to_string(options_.unready_after.count()) + " s)";
}

void KubeConnection::start() {
  for (auto& reflector : reflectors_)
    threads_.emplace_back([r = reflector.get()] {
      name_this_thread(std::string("watch-") + r->name());
      r->run();
    });
  if (elector_) elector_->start();
  if (cost_keeper_) cost_keeper_->start();
  if (group_preemptor_) group_preemptor_->start();
  threads_.emplace_back([this] {
    name_this_thread("ledger-expiry");
    bool stale_logged = false;
    while (!stopping_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      // While the pods' watch fails, nothing could confirm an assumed pod: its assumption is kept (as
      // kube-scheduler's cache keeps one until its binding is seen), and runs its TTL again once the
      // watch is back, instead of expiring and leaving its GPUs counted free. From the first failure, not
      // a grace period later: a pod bound just before the watch broke would otherwise expire in the gap.
      if (pods_reflector_->failing_for() > std::chrono::steady_clock::duration::zero())
        ledger_->hold_assumed_until(std::chrono::steady_clock::now() + options_.ledger.assume_ttl);
      if (const size_t expired = ledger_->expire().assumed)
        spdlog::info("placement ledger: {} assumed pod(s) expired without the watch confirming them", expired);
      const ClusterView::Stats s = view_->stats();
      const bool stale = s.seconds_since_event > static_cast<double>(options_.stale_after.count());
      if (stale && !stale_logged) {
        spdlog::warn("cluster view: no event from the API server for {:.0f}s; answering from the last view",
                     s.seconds_since_event);
      } else if (!stale && stale_logged) {
        spdlog::info("cluster view: events flowing again");
      }
      stale_logged = stale;
    }
  });
}

void KubeConnection::elect_writer(const DeletionCostSettings& settings) {
  if (elector_) return;  // one lease for every writer
  kube::LeaseConfig lease{settings.lease_namespace, settings.lease_name, settings.identity,
                          settings.lease_duration, settings.renew_deadline, settings.retry_period};
  elector_ = std::make_unique<kube::LeaseElector>(api_, lease, [name = settings.lease_name](bool leader) {
    spdlog::info("writers (deletion costs, group preemption): {} lease {}", leader ? "holding" : "no longer holding",
                 name);
  });
}

void KubeConnection::keep_deletion_costs(const DeletionCostSettings& settings,
                                         std::shared_ptr<const PolicyHolder> policies) {
  view_->keep_cost_details();
  elect_writer(settings);
  kube::DeletionCostOptions options;
  options.qps = settings.qps;
  options.scheduler_names = settings.scheduler_names;
  cost_keeper_ = std::make_unique<kube::DeletionCostKeeper>(
      view_, binder_, std::move(policies), [e = elector_.get()] { return e->leader(); }, options);
}

void KubeConnection::preempt_for_groups(std::shared_ptr<const PolicyHolder> policies, const std::string& instance,
                                        const DeletionCostSettings& lease) {
  view_->keep_preemption_victims();
  elect_writer(lease);
  group_preemptor_ = std::make_unique<kube::GroupPreemptor>(
      ledger_, std::make_shared<kube::ApiEvictor>(api_, instance), std::move(policies),
      [e = elector_.get()] { return e->leader(); });  // one replica of several evicts
}

std::optional<DeletionCostStats> KubeConnection::deletion_cost_stats() const {
  if (!cost_keeper_) return std::nullopt;
  const kube::DeletionCostKeeper::Stats s = cost_keeper_->stats();
  return DeletionCostStats{elector_->leader(), s.written, s.failed, s.passes, s.pods_by_bucket, s.user_owned};
}

void KubeConnection::stop() {
  if (stopping_.exchange(true)) return;
  // The writer stops first, then the lease is released (another replica takes over at once), while
  // the API client still works.
  if (cost_keeper_) cost_keeper_->stop();
  if (group_preemptor_) group_preemptor_->stop();
  if (elector_) elector_->stop(true);
  for (auto& reflector : reflectors_) reflector->stop();
  api_->cancel();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

}  // namespace gpu_extender
