#pragma once
// A stand-in for kube-scheduler's scheduling loop (pkg/scheduler/schedule_one.go, v1.26), for tests
// and benchmarks: no kube-scheduler can be installed here, and the extender's behaviour under the
// scheduler's pace is what matters.
//
// What it does, as scheduleOne does, for each pod in queue order:
//  1. its own filter: NodeResourcesFit on nvidia.com/gpu, custom.resource/aaa and cpu against its own
//     cache (pods bound plus pods it assumed), as with ignoredByScheduler: false, TaintToleration (a
//     NoSchedule or NoExecute taint the pod does not tolerate refuses the node) and InterPodAntiAffinity
//     for required terms on kubernetes.io/hostname with matchLabels (a node with a pod those labels
//     match refuses it; other terms are not read), over the nodes from
//     where the last pod's search stopped, until numFeasibleNodesToFind nodes fit
//     (findNodesThatPassFilters: max(100, N x p / 100), p = percentageOfNodesToScore or 50 - N/125,
//     at least 5), in the order 16 parallel workers find them (a new interleaving each cycle, seeded);
//  2. when the pod requests one of the extender's managedResources (IsInterested), the extender's
//     /filter (full Node objects, or NodeNames with nodeCacheCapable), keeping what it answers
//     (Nodes.items in full mode, NodeNames in names mode: a name it was not sent fails the cycle, "claims
//     a filtered node ... not found in the input node list"); a pod it is not interested in never
//     reaches the extender and is bound by the default binder (a Binding posted to the API server);
//  3. if more than one node is left, the default score plugins (default_plugins.h, unless own_score
//     replaces them) plus the extender's /prioritize: total = plugins + extender score x weight x
//     (MaxNodeScore / MaxExtenderPriority = 10); one node left: no scoring at all;
//  4. selectHost: the highest total, ties broken at random (reservoir sampling, seeded);
//  5. assume the pod in its own cache, start the binding cycle (the extender's /bind) apart, and go on
//     with the next pod at once: pod i+1's /filter races pod i's /bind. Binding cycles run on a few
//     worker threads: a goroutine starts in microseconds, where a new thread per bind would add a
//     delay the real scheduler does not have.
// Every request to the extender takes its connection from one pool kept as kube-scheduler's Go
// transport keeps it (go_transport_pool.h: an idle one when there is one, at most two idle, others
// closed), written and read as Go's net/http client does (raw_http_client.h).
// A failed bind forgets the assumption, as the scheduler's ForgetPod does. With `attempts` > 1, pods left
// unplaced (unschedulable, or their bind failed) are tried again in rounds, after a backoff that doubles
// from initial_backoff up to max_backoff, as the scheduler's backoff queue retries them (1 s to 10 s
// there; tests scale it down).
//
// Not thread-safe: one driver per test; binds run on threads it owns and joins.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "default_plugins.h"
#include "fake_api_server.h"
#include "go_transport_pool.h"

namespace test_support {

struct DriverOptions {
  bool node_cache_capable = false;  // names mode
  int weight = 5;                   // the extender's weight in the scheduler's configuration
  uint64_t seed = 1;
  // The scheduler's own score of a node for a pod (its plugins); default: the default plugins'.
  std::function<int64_t(const json& node, const json& pod)> own_score;
  // percentageOfNodesToScore; 0: the adaptive default.
  int percentage_of_nodes_to_score = 0;
  // The extender's managedResources: pods requesting none of them skip it.
  std::vector<std::string> managed_resources{"nvidia.com/gpu", "custom.resource/aaa"};
  // One by one: wait for each pod's bind to return before the next pod's cycle.
  bool sequential = false;
  // Scheduling attempts per pod (1: no retry), and the backoff between rounds of retries.
  int attempts = 1;
  std::chrono::milliseconds initial_backoff{1000}, max_backoff{10000};
};

struct Placement {
  std::string pod;
  std::string node;   // "" when unschedulable or the bind failed
  std::string error;  // why (the last attempt's)
  int attempts = 0;   // scheduling cycles this pod went through
};

// findNodesThatPassFilters' numFeasibleNodesToFind, for a cluster of `all` nodes.
size_t feasible_nodes_to_find(size_t all, int percentage_of_nodes_to_score);

struct DriverTimings {
  std::vector<double> filter_ms, prioritize_ms;  // round trips of the extender's verbs, as seen here
  std::vector<double> extender_ms;               // filter + prioritize per pod: what the extender adds
  std::vector<double> bind_ms;                   // /bind round trips (off the scheduling path)
  double seconds = 0;                            // the whole run, binds included
  // The widest gap between the scheduler's own scores of two nodes in one cycle: 0 would mean the
  // extender never had to outweigh anything.
  int64_t own_score_spread = 0;
};

class SchedulerDriver {
 public:
  SchedulerDriver(FakeApiServer& api, int extender_port, DriverOptions options);
  ~SchedulerDriver();

  // Schedules these pods (already created, pending, in the fake API server) in order.
  std::vector<Placement> schedule(const std::vector<json>& pods);
  const DriverTimings& timings() const { return timings_; }
  // Connections opened to the extender so far.
  size_t extender_connections() const { return connections_.dials(); }

 private:
  // The resources its NodeResourcesFit counts, in whole units as the tests' objects carry them (cpu in
  // millicores).
  static constexpr const char* kCounted[] = {"nvidia.com/gpu", "custom.resource/aaa", "cpu"};
  static int64_t counted_request(const json& pod, const std::string& resource);
  struct NodeState {
    json object;
    std::map<std::string, int64_t> allocatable, requested;  // of the counted resources (cpu in millicores)
    PluginNode plugins;                                    // what the default score plugins read
    std::map<std::string, json> pod_labels;                // by pod uid: the labels of the pods counted here
  };
  void load_cluster();
  void count(const json& pod, NodeState& node, int sign);
  // findNodesThatPassFilters: the nodes that fit, from where the last search stopped.
  std::vector<std::string> own_filter(const json& pod);
  bool fits(const std::map<std::string, int64_t>& wants, const NodeState& node) const;
  static bool tolerates(const json& pod, const json& node);
  static bool anti_affinity_allows(const json& pod, const NodeState& node);
  bool interested(const json& pod) const;
  json extender_args(const json& pod, const std::vector<std::string>& nodes) const;
  // The extender's /filter: false (with placement.error) when the cycle fails; `feasible` is what it kept.
  bool extender_filter(const json& pod, std::vector<std::string>& feasible, Placement& placement, double& ms);
  // Scores of `feasible`: the scheduler's own, plus the extender's /prioritize when it is interested.
  std::map<std::string, int64_t> scores(const json& pod, const std::vector<std::string>& feasible, bool with_extender,
                                        double& ms);
  void schedule_one(const json& pod, Placement& placement);
  std::string select_host(const std::vector<std::string>& nodes, const std::map<std::string, int64_t>& totals);
  void assume(const json& pod, const std::string& node, int sign);
  void bind(const json& pod, const std::string& node, Placement& placement);
  // The default binder: a Binding posted to the API server, for pods the extender does not bind.
  void default_bind(const json& pod, const std::string& node, Placement& placement);
  void start_binding(std::function<void()> cycle);
  void wait_for_binds();

  FakeApiServer& api_;
  DriverOptions options_;
  std::mt19937_64 rng_;
  // The connections to the extender, for every verb.
  GoTransportPool connections_;
  std::map<std::string, NodeState> nodes_;
  std::vector<std::string> node_order_;  // the scheduler's node list
  size_t next_start_node_ = 0;           // nextStartNodeIndex
  std::mutex mutex_;  // nodes_[..].requested, placements and timings, written by bind workers
  std::condition_variable bind_queue_changed_;
  std::deque<std::function<void()>> bind_queue_;
  size_t binds_in_flight_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> bind_workers_;
  size_t idle_bind_workers_ = 0;
  void add_bind_worker();  // under mutex_
  DriverTimings timings_;
};

// A pending pod of the shipped scheduler requesting `gpus` GPUs (A100) and `aaa` of custom.resource/aaa,
// one of the set `app` (a ReplicaSet's pods share theirs, which the spreading plugin reads).
json pending_pod(const std::string& name, int gpus, int aaa, const std::string& app = "burst");

}  // namespace test_support
