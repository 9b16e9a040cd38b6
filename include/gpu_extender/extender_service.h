#pragma once
// The extender verbs as functions of a request body: decode, call the policy, encode. No HTTP here,
// so tests and benchmarks call the same code the server runs.
//
// Thread-safe: any number of threads may call handle() at once; each call works in its own Workspace,
// and the policy and usage source are shared read-only.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu_extender/bind_tracker.h"
#include "gpu_extender/binder.h"
#include "gpu_extender/cluster_view.h"
#include "gpu_extender/policy.h"
#include "gpu_extender/usage_source.h"
#include "gpu_extender/workspace.h"

namespace gpu_extender {

enum class Verb { kFilter, kPrioritize, kBind, kPreempt, kExplain };

// What the verbs work with. Only the policy is required: without a cluster view there is no names
// mode and no /preempt; without a binder /bind answers an Error.
class GpuUtilizationSource;

struct ServiceParts {
  std::shared_ptr<const Policy> policy;
  std::shared_ptr<const UsageSource> usage;  // none, a pods snapshot, or the cluster view
  std::shared_ptr<ClusterView> cluster;      // the API watch: node cache, pod view, assumed pods
  std::shared_ptr<Binder> binder;
  // /bind binds only pods whose spec.schedulerName is one of these.
  std::vector<std::string> scheduler_names{"gpu-scheduler"};
  // How long /filter and /prioritize wait for the /bind of a pod scored before (see BindTracker).
  std::chrono::milliseconds bind_wait{50};
  // Live GPU utilisation (--prometheus-url), for scorer gpuIdle and /explain; none without the flag.
  std::shared_ptr<const GpuUtilizationSource> utilization{};
};

struct Reply {
  int status = 200;
  std::string body;  // JSON
};

// What a verb did, for the request log line (and metrics later).
struct VerbSummary {
  std::string pod;         // namespace/name
  size_t nodes_in = 0;
  size_t nodes_out = 0;    // filter: passing nodes
  std::string top_scores;  // prioritize: "node-a=10 node-b=9 node-c=7"
  std::string error;       // set when the request failed
  // Why, in a word, when the error is answered inside a 200 (the protocol's Error field): counted in
  // gpu_extender_answer_errors_total, since kube-scheduler only logs it. no_node_cache, bind_no_api,
  // bind_refused, bind_failed.
  std::string error_cause;
  std::vector<std::pair<std::string_view, size_t>> rejections;  // filter: refused nodes per rule
  std::string bind_result;  // bind: bound | failed | refused | no_api
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

  // Handles the request in workspace.body; the answer goes to workspace.answer. Returns the HTTP status.
  int handle(Verb verb, Workspace& workspace, VerbSummary& summary) const;
  // The same for a body held elsewhere (tests, tools): copied into a pooled workspace first.
  Reply handle(Verb verb, std::string_view body, VerbSummary& summary) const;

  WorkspacePool& workspaces() const { return workspaces_; }
  // The policy new requests use. Requests in flight keep the one they started with.
  std::shared_ptr<const Policy> policy() const { return policy_.load(); }
  // Swaps in a new policy for new requests. Refused (with the reason) when it reads other labels,
  // annotations or resources than the running one: the cluster view and usage were built with those,
  // so such a change needs a restart.
  std::string replace_policy(std::shared_ptr<const Policy> next) const;
  const UsageSource& usage() const { return *parts_.usage; }
  // Ready to answer: always without a cluster view; with one, once it has listed nodes and pods.
  bool ready() const { return !draining_ && (!parts_.cluster || parts_.cluster->ready()); }
  // Shutting down: /readyz answers 503 so that Services stop sending new requests here.
  void begin_draining() const { draining_ = true; }
  BindTracker::Stats bind_tracker_stats() const { return tracker_.stats(); }

 private:
  // Decodes ExtenderArgs. For the scheduler's own calls (`scheduling`: /filter and /prioritize, not
  // /explain) notes the pod for /bind, then waits for the bind of the pod scored just before it.
  const ExtenderArgs& decode_args(Workspace& ws, VerbSummary& summary, bool scheduling) const;
  // The node inputs of either mode in ws.inputs; ws.input_index maps each of args.node_names to its
  // input, or to npos for a name the node cache lacks. False: names mode without a node cache.
  bool gather(Workspace& ws, const ExtenderArgs& args) const;
  // Names mode (with a node cache): ws.slots for args.node_names, and every known node's verdict in
  // ws.verdict_memo, judged again only where the node, the pod's facts or the policy changed.
  void judge_names(Workspace& ws, const ExtenderArgs& args) const;
  // Fresh Prometheus utilisation into the inputs gpuIdle scores (none without --prometheus-url).
  void add_live_utilization(std::vector<NodeInput>& inputs) const;
  // Names-mode prioritize: ws.sheet.final for ws.scored_slots, the per-node scorers' raw scores (and,
  // when only those apply, their weighted mean) kept in the workspace's memo by slot and computed only
  // for nodes that changed since (see Policy::score_alone).
  void score_names(Workspace& ws, const PodRequest& pod) const;
  // The checks and bookkeeping of /bind around the API call; "" when bound.
  std::string bind_pod(const BindingArgs& args, VerbSummary& summary) const;
  // GPU sharing (shared_gpu_binding.cpp): chooses the device for the pod's shared memory on args.node
  // and counts the pod there at once; the device, and the annotations that tell the device plugin.
  // "" or why not.
  std::string assume_on_shared_gpu(const BindingArgs& args, const PendingPod& pod, Binder::Annotations& annotations,
                                   int& device) const;
  // The binding failed: removes the device annotations, so that they claim nothing.
  void withdraw_shared_gpu(const BindingArgs& args) const;
  int filter(Workspace& ws, VerbSummary& summary) const;
  int prioritize(Workspace& ws, VerbSummary& summary) const;
  int bind(Workspace& ws, VerbSummary& summary) const;
  int preempt(Workspace& ws, VerbSummary& summary) const;
  int explain(Workspace& ws, VerbSummary& summary) const;

  ServiceParts parts_;
  mutable std::atomic<std::shared_ptr<const Policy>> policy_;
  mutable std::atomic<bool> draining_{false};
  mutable WorkspacePool workspaces_;
  mutable BindTracker tracker_;
  mutable std::mutex shared_gpu_bind_mutex_;  // a device is chosen and assumed under it
};

}  // namespace gpu_extender
