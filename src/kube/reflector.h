#pragma once
// List-then-watch of one kind of object (pods on nodes, or nodes) into the ClusterView (and, for pods,
// then into the placement ledger, which forgets the assumptions the watch confirms), as client-go's
// reflector does: a paginated LIST gives a resourceVersion, a WATCH from there streams changes
// (with bookmarks), a dropped stream resumes from the last version seen, and "410 Gone" (or an ERROR
// event) means the version is too old: list again. Failures back off exponentially, capped.
//
// Thread-safe: run() is the loop of one dedicated thread; stop() may be called from any thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "api_client.h"
#include "gpu_extender/kube/cluster_view.h"
#include "gpu_extender/kube/placement_ledger.h"
#include "gpu_extender/wire/wire.h"

namespace gpu_extender::kube {

struct ReflectorOptions {
  std::chrono::seconds watch_timeout{300};         // asked of the server (timeoutSeconds)
  std::chrono::milliseconds idle_timeout{360000};  // nothing at all for this long: reconnect
  // Events of a burst read together, once per this (ApiClient::watch): a pod bound in a burst reaches
  // the view up to this late. The extender's own binds do not wait for it (the ledger counts a pod as
  // assumed from its /bind on), so this delays what others do, by less than a scheduling cycle.
  std::chrono::milliseconds watch_batch{40};
  std::chrono::milliseconds min_backoff{200};
  std::chrono::milliseconds max_backoff{30000};
  size_t page_size = 500;
};

class Reflector {
 public:
  // kResourceSlices, kResourceClaims, kResourceClaimTemplates: DRA (resource.k8s.io/v1, 1.34+). A server
  // that does not serve them (404) is asked again every kNotServedRetry, the view holding none meanwhile.
  enum class Kind { kPods, kNodes, kResourceSlices, kResourceClaims, kResourceClaimTemplates };
  static constexpr std::chrono::minutes kNotServedRetry{5};
  Reflector(Kind kind, std::shared_ptr<const ApiClient> api, std::shared_ptr<ClusterView> view,
            std::shared_ptr<PlacementLedger> ledger, ViewSchema schema, ReflectorOptions options = {});

  void run();
  void stop();
  // This reflector's first list waits (at most `limit`) until `earlier` has tried its own first list: the
  // pods' list reads what claims and claim templates ask (ClusterView::add_claimed_gpus), so at start it
  // comes after theirs. Set before run().
  void list_after(const Reflector* earlier, std::chrono::milliseconds limit);
  // Blocks until this reflector's first list was tried (listed, refused, or not served), at most `limit`.
  void wait_first_list(std::chrono::milliseconds limit) const;

  struct Counters {
    std::atomic<uint64_t> lists{0}, watches{0}, events{0}, relists_after_gone{0}, failures{0}, not_understood{0};
  };
  const Counters& counters() const { return counters_; }
  // How long this reflector has been failing (lists or watches refused, unreachable, dropped) with
  // nothing from the API server since: zero while it is listed and watching, or not served (no DRA).
  std::chrono::steady_clock::duration failing_for() const;
  const char* name() const;

 private:
  // kResume: closed normally, watch again from the last version. kRelist: 410 Gone or an unreadable
  // event, list now. kFailed: broke mid-way or too many requests, back off and watch again. kRefused:
  // the server answered the watch with an error, back off and list (client-go's reflector does the same:
  // only "connection refused" and 429 are retried as a watch; after an outage a list also brings what no
  // watch can replay).
  enum class WatchEnd { kResume, kRelist, kFailed, kRefused };
  void heard_from_server() { failing_since_ns_.store(0, std::memory_order_relaxed); }
  std::atomic<int64_t> failing_since_ns_{0};  // steady clock; 0: not failing
  bool list();
  const char* path() const;  // the collection's path, with the query's start
  bool dra() const { return kind_ != Kind::kPods && kind_ != Kind::kNodes; }
  // What a list gives the view, all pages together (only the kind's own part is filled).
  struct Listed {
    std::vector<ClusterView::BoundPod> pods;
    std::vector<std::shared_ptr<const CachedNode>> nodes;
    std::vector<DraSlice> slices;
    std::vector<DraClaim> claims;  // claims, or templates
  };
  // One page of a list, decoded into `listed`; false when it could not be read.
  bool decode_page(const std::string& body, ListMeta& meta, Listed& listed);
  void replace_all(Listed& listed, const ListMeta& meta);  // the view (and ledger) take a whole list
  bool not_served_ = false;  // the last list answered 404
  WatchEnd watch();
  bool apply_event(std::string_view line, WatchEnd& end);
  // An object with a field the policy reads that makes no sense (a pod's GPU memory annotation "40GB",
  // a node's memory label "lots"): counted, logged at most once a minute; what could be read counts.
  void check_understood(const PodRequest& pod);
  void check_understood(const NodeView& node);
  void check_understood(const ResourceSliceView& slice);
  void check_understood(const ResourceClaimView& claim);
  void not_understood(std::string_view what, std::string_view why);
  std::chrono::steady_clock::time_point last_not_understood_log_{};
  void sleep_for(std::chrono::milliseconds duration);

  Kind kind_;
  std::shared_ptr<const ApiClient> api_;
  std::shared_ptr<ClusterView> view_;
  std::shared_ptr<PlacementLedger> ledger_;  // told of pods after the view
  ViewSchema schema_;
  ReflectorOptions options_;
  std::string resource_version_;
  Counters counters_;
  WireDecoder decoder_;

  std::atomic<bool> stopping_{false};
  mutable std::mutex sleep_mutex_;
  mutable std::condition_variable sleep_cv_;  // stop(), and the first list tried
  bool first_list_tried_ = false;              // under sleep_mutex_
  std::vector<std::pair<const Reflector*, std::chrono::milliseconds>> list_after_;
};

}  // namespace gpu_extender::kube
