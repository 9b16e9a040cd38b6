#pragma once
// The extender verbs as functions of a request body: decode, call the policy, encode. No HTTP here,
// so tests and benchmarks call the same code the server runs. Each verb is a file of its own in
// src/server/service/; this class holds what they share and dispatches to them.
//
// Thread-safe: any number of threads may call handle() at once; each call works in its own Workspace,
// and the policy and usage source are shared read-only.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu_extender/kube/binder.h"
#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/state/placement_ledger.h"  // BindWaitStats
#include "gpu_extender/policy/policy.h"
#include "gpu_extender/policy/policy_holder.h"
#include "gpu_extender/common/status.h"
#include "gpu_extender/usage/usage_source.h"

namespace gpu_extender {

enum class Verb : uint8_t { kFilter, kPrioritize, kBind, kPreempt, kExplain };
inline constexpr std::array kAllVerbs{Verb::kFilter, Verb::kPrioritize, Verb::kBind, Verb::kPreempt, Verb::kExplain};
// "filter", ...: the path without its slash, and the `verb` label of every metric.
std::string_view verb_name(Verb verb);

// How a /bind ended, for the request log and gpu_extender_binds_total{result}.
enum class BindResult : uint8_t { kNone, kBound, kFailed, kRefused, kNoApi };
inline constexpr std::array kBindResults{BindResult::kBound, BindResult::kFailed, BindResult::kRefused,
                                         BindResult::kNoApi};
std::string_view bind_result_name(BindResult result);  // bound, failed, refused, no_api

// Why an error was answered inside a 200 (the protocol's Error field), for
// gpu_extender_answer_errors_total{cause}: kube-scheduler only logs it.
enum class AnswerError : uint8_t { kNone, kNoNodeCache, kGroupNoClusterView, kBindNoApi, kBindRefused, kBindFailed };
inline constexpr std::array kAnswerErrors{AnswerError::kNoNodeCache, AnswerError::kGroupNoClusterView,
                                          AnswerError::kBindNoApi, AnswerError::kBindRefused, AnswerError::kBindFailed};
std::string_view answer_error_name(AnswerError cause);  // no_node_cache, bind_no_api, ...
Verb answer_error_verb(AnswerError cause);              // the verb that answers it

class GpuUtilizationSource;
class PlacementLedger; // gpu_extender/state/placement_ledger.h
struct Workspace;      // server/service/workspace.h: one request's buffers
class WorkspacePool;   // server/service/workspace.h
class PreemptorMemory; // server/service/preemptor_memory.h

// What the verbs work with. Only the policy is required: without a cluster view there is no names
// mode and no /preempt; without a binder /bind answers an Error.
struct ServiceParts {
  std::shared_ptr<const Policy> policy;      // the policy to start with, when `policies` is not given
  std::shared_ptr<const UsageSource> usage;  // none, a pods snapshot, or the cluster view
  std::shared_ptr<ClusterView> cluster;      // the API watch: node cache, pod view
  std::shared_ptr<Binder> binder;
  // When not empty, /bind binds nothing and answers this: the verbs are served where anyone who reaches
  // the port may call them (app/wiring.cpp decides).
  std::string bind_refusal{};
  // Why the cluster view is stale ("" while it is not: KubeConnection::staleness); /readyz fails then.
  std::function<std::string()> staleness{};
  // What is in flight between the verbs (pending and assumed pods, pod groups' plans and held room);
  // with the cluster view only, made over it when not given.
  std::shared_ptr<PlacementLedger> ledger{};
  // /bind binds only pods whose spec.schedulerName is one of these.
  std::vector<std::string> scheduler_names{"gpu-scheduler"};
  // How long /filter and /prioritize wait for the /bind of a pod scored before (PlacementLedger::
  // expect_bind); only where this extender binds.
  std::chrono::milliseconds bind_wait{50};
  // How long a /filter about to refuse every node, some on usage, may wait for the watch's events on
  // their way (ClusterView::catch_up), judging again on each; 0 never waits.
  std::chrono::milliseconds view_catch_up{20};
  // Live GPU utilisation (--prometheus-url), for scorer gpuIdle and /explain; none without the flag.
  std::shared_ptr<const GpuUtilizationSource> utilization{};
  // The policy in force, shared with whoever replaces it (the policy watcher) or reads it too; made
  // from `policy` when not given.
  std::shared_ptr<PolicyHolder> policies{};
};

struct Reply {
  int status = 200;
  std::string body;  // JSON
};

// What a verb did, for the request log line and the metrics.
struct VerbSummary {
  std::string pod;         // namespace/name
  size_t nodes_in = 0;
  size_t nodes_out = 0;    // filter: passing nodes
  std::string top_scores;  // prioritize: "node-a=10 node-b=9 node-c=7"
  std::string error;       // set when the request failed
  AnswerError error_cause = AnswerError::kNone;  // when the error is answered inside a 200
  std::vector<std::pair<std::string_view, size_t>> rejections;  // filter: refused nodes per rule
  BindResult bind_result = BindResult::kNone;
  int shared_gpu_device = -1;  // bind: the GPU a pod sharing one by memory was bound to
  // What else the log line says: the GPU chosen at /bind, the GPU victims free at /preempt.
  std::string detail;
  double bind_wait_ms = 0;  // filter, prioritize: time spent waiting for another pod's /bind
  // Filled only when asked (debug logging): every refused node and why.
  bool want_reasons = false;
  std::vector<std::pair<std::string, std::string>> reasons;
};

class ExtenderService {
 public:
  explicit ExtenderService(ServiceParts parts);
  ExtenderService(std::shared_ptr<const Policy> policy, std::shared_ptr<const UsageSource> usage)
      : ExtenderService(ServiceParts{std::move(policy), std::move(usage), nullptr, nullptr}) {}
  ~ExtenderService();
  ExtenderService(const ExtenderService&) = delete;
  ExtenderService& operator=(const ExtenderService&) = delete;

  // Handles the request in workspace.body; the answer goes to workspace.answer. Returns the HTTP status.
  int handle(Verb verb, Workspace& workspace, VerbSummary& summary) const;
  // The same for a body held elsewhere (tests, tools): copied into a pooled workspace first.
  Reply handle(Verb verb, std::string_view body, VerbSummary& summary) const;

  // The pool a request of `verb` takes its workspace from. /filter and /prioritize have their own: their
  // workspaces keep names mode's memo, and one a /bind used last (a bind rarely alone: the scheduler
  // binds in parallel) would come to the next /filter with no memo, all its nodes to judge again.
  WorkspacePool& workspaces(Verb verb) const;
  // The policy new requests use. Requests in flight keep the one they started with.
  std::shared_ptr<const Policy> policy() const { return parts_.policies->current(); }
  // Swaps in a new policy for new requests (see PolicyHolder::replace).
  Status replace_policy(std::shared_ptr<const Policy> next) const { return parts_.policies->replace(std::move(next)); }
  const UsageSource& usage() const { return *parts_.usage; }
  // Ready to answer: always without a cluster view; with one, once it has listed nodes and pods and
  // while its watches are not failing past their bound.
  bool ready() const { return unready_reason().empty(); }
  // Why not ready ("" when ready), for /readyz.
  std::string unready_reason() const;
  // Shutting down: /readyz answers 503 so that Services stop sending new requests here.
  void begin_draining() const { draining_ = true; }
  // How often /filter and /prioritize waited for binds (the ledger's; nothing without one).
  BindWaitStats bind_wait_stats() const;
  // POST /mutate-pods (the admission webhook, server/admission/pod_admission.h): the AdmissionReview
  // answered, its status (400 for a body that is no review), and what was done, for the log.
  struct AdmissionReply {
    int status;
    std::string body, detail;
  };
  AdmissionReply admit(const std::string& review) const;

 private:
  ServiceParts parts_;
  mutable std::atomic<bool> draining_{false};
  std::unique_ptr<WorkspacePool> scheduling_workspaces_, other_workspaces_;
  std::unique_ptr<PreemptorMemory> preemptors_;
};

}  // namespace gpu_extender
