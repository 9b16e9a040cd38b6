#pragma once
// List-then-watch of one kind of object (watched_kind.h: pods on nodes, nodes, the DRA kinds) into the
// cluster state, as client-go's reflector does: a paginated LIST gives a resourceVersion, a WATCH from
// there streams changes (with bookmarks), a dropped stream resumes from the last version seen, and
// "410 Gone" (or an ERROR event) means the version is too old: list again. Failures back off
// exponentially, capped.
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

#include "gpu_extender/kube/api_client.h"
#include "watched_kind.h"

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
  // A kind whose group a server does not serve (404: DRA before 1.34, or turned off; DeviceTaintRules
  // before 1.37) is asked again every kNotServedRetry, the state holding none of it meanwhile.
  static constexpr std::chrono::minutes kNotServedRetry{5};
  Reflector(Watched kind, std::shared_ptr<const ApiClient> api, WatchTarget target, ReflectorOptions options = {});

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
  bool not_served_ = false;  // the last list answered 404
  WatchEnd watch();
  bool apply_event(std::string_view line, WatchEnd& end);
  // An object with a field the policy reads that makes no sense (a pod's GPU memory annotation "40GB",
  // a node's memory label "lots"): counted, logged at most once a minute; what could be read counts.
  void not_understood(std::string_view what, std::string_view why);
  std::chrono::steady_clock::time_point last_not_understood_log_{};
  void sleep_for(std::chrono::milliseconds duration);

  std::shared_ptr<const ApiClient> api_;
  std::shared_ptr<PlacementLedger> ledger_;  // told on every list and event that the view is fresh (observe_heard)
  std::unique_ptr<WatchedKind> kind_;
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
