// ExtenderService: what the verbs share (parts, the workspace pools, what /preempt remembers), and dispatch.
#include <algorithm>
#include <thread>

#include "common/json_writer.h"
#include "gpu_extender/usage/gpu_utilization.h"
#include "gpu_extender/state/placement_ledger.h"
#include "gpu_extender/policy/group_plan.h"
#include "gpu_extender/wire/wire_encode.h"
#include "server/admission/pod_admission.h"
#include "server/service/verb_context.h"

namespace gpu_extender {
namespace {
// As many as the default number of workers, so that steady load never frees and re-creates a
// workspace (which fragmented the heap: resident memory crept under concurrency 64).
size_t idle_workspaces_to_keep() { return std::max(4U, 2 * std::thread::hardware_concurrency()); }
}  // namespace

std::string_view verb_name(Verb verb) {
  switch (verb) {
    case Verb::kFilter: return "filter";
    case Verb::kPrioritize: return "prioritize";
    case Verb::kBind: return "bind";
    case Verb::kPreempt: return "preempt";
    case Verb::kExplain: return "explain";
  }
  return "unknown";
}

std::string_view bind_result_name(BindResult result) {
  switch (result) {
    case BindResult::kNone: return "";
    case BindResult::kBound: return "bound";
    case BindResult::kFailed: return "failed";
    case BindResult::kRefused: return "refused";
    case BindResult::kNoApi: return "no_api";
  }
  return "";
}

std::string_view answer_error_name(AnswerError cause) {
  switch (cause) {
    case AnswerError::kNone: return "other";
    case AnswerError::kNoNodeCache: return "no_node_cache";
    case AnswerError::kGroupNoClusterView: return "group_no_cluster_view";
    case AnswerError::kBindNoApi: return "bind_no_api";
    case AnswerError::kBindRefused: return "bind_refused";
    case AnswerError::kBindFailed: return "bind_failed";
  }
  return "other";
}

Verb answer_error_verb(AnswerError cause) {
  return cause == AnswerError::kNoNodeCache || cause == AnswerError::kGroupNoClusterView ? Verb::kFilter : Verb::kBind;
}

ExtenderService::ExtenderService(ServiceParts parts)
    : parts_(std::move(parts)),
      scheduling_workspaces_(std::make_unique<WorkspacePool>(idle_workspaces_to_keep())),
      other_workspaces_(std::make_unique<WorkspacePool>(idle_workspaces_to_keep())),
      preemptors_(std::make_unique<PreemptorMemory>()) {
  if (!parts_.policies) parts_.policies = std::make_shared<PolicyHolder>(parts_.policy);
  if (parts_.cluster && !parts_.ledger) parts_.ledger = std::make_shared<PlacementLedger>(parts_.cluster);
  parts_.policy = nullptr;  // the holder's is the one in force
  if (!parts_.usage) parts_.usage = parts_.cluster ? std::shared_ptr<const UsageSource>(parts_.cluster) : make_no_usage();
}

ExtenderService::~ExtenderService() = default;

WorkspacePool& ExtenderService::workspaces(Verb verb) const {
  return verb == Verb::kFilter || verb == Verb::kPrioritize ? *scheduling_workspaces_ : *other_workspaces_;
}

int ExtenderService::handle(Verb verb, Workspace& ws, VerbSummary& summary) const {
  ws.answer.clear();
  ws.policy = parts_.policies->current();
  const verbs::VerbContext ctx{parts_, *preemptors_};
  try {
    switch (verb) {
      case Verb::kFilter: return verbs::filter(ctx, ws, summary);
      case Verb::kPrioritize: return verbs::prioritize(ctx, ws, summary);
      case Verb::kBind: return verbs::bind(ctx, ws, summary);
      case Verb::kPreempt: return verbs::preempt(ctx, ws, summary);
      case Verb::kExplain: return verbs::explain(ctx, ws, summary);
    }
  } catch (const DecodeError& e) {
    return verbs::fail(ws, 400, e.what(), summary);
  }
  return verbs::fail(ws, 500, "unknown verb", summary);
}

Reply ExtenderService::handle(Verb verb, std::string_view body, VerbSummary& summary) const {
  std::shared_ptr<Workspace> ws = workspaces(verb).acquire();
  ws->body.reserve(body.size() + kJsonPadding);
  ws->body.assign(body);
  Reply reply;
  reply.status = handle(verb, *ws, summary);
  reply.body = ws->answer;
  return reply;
}

std::string ExtenderService::unready_reason() const {
  if (draining_) return "shutting down";
  if (parts_.cluster && !parts_.cluster->ready()) return "the cluster view has not listed nodes and pods yet";
  if (parts_.staleness) return parts_.staleness();
  return "";
}

BindWaitStats ExtenderService::bind_wait_stats() const {
  return parts_.ledger ? parts_.ledger->bind_wait_stats() : BindWaitStats{};
}

ExtenderService::AdmissionReply ExtenderService::admit(const std::string& review) const {
  const std::shared_ptr<const Policy> policy = parts_.policies->current();
  const ViewSchema& schema = policy->schema();
  admission::SeenValues seen;
  if (parts_.cluster)
    parts_.cluster->visit_gpu_models([&](size_t label, std::string_view model) {
      if (label < schema.node_gpu_model_labels.size()) seen[schema.node_gpu_model_labels[label]].emplace(model);
    });
  admission::AdmissionAnswer a = admission::admit_pod(review, schema, parts_.scheduler_names, seen);
  return {a.status, std::move(a.body), std::move(a.detail)};
}

namespace verbs {

int fail(Workspace& ws, int status, std::string_view message, VerbSummary& summary) {
  ws.answer.clear();
  encode_error_object(message, ws.answer);
  summary.error = std::string(message);
  return status;
}

std::string pod_label(const PodRequest& pod) { return std::string(pod.ns) + "/" + std::string(pod.name); }

ExtenderArgs& decode_args(Workspace& ws, VerbSummary& summary) {
  ExtenderArgs& args = ws.decoder.decode_extender_args(ws.body, ws.policy->schema());
  summary.pod = pod_label(args.pod);
  summary.nodes_in = args.node_names.size();
  return args;
}

bool add_claimed_gpus(const VerbContext& ctx, PodRequest& pod) {
  if (!ctx.parts.cluster || pod.claims.empty()) return false;
  const int64_t before = pod.requests.get(ViewSchema::kGpuResource);
  ctx.parts.cluster->add_claimed_gpus(pod, pod.requests, &pod.device_tolerations);
  return pod.requests.get(ViewSchema::kGpuResource) != before;
}

bool binds_in_flight_may_change_verdicts(const PodRequest& pod, bool asks_through_claims, const ViewSchema& schema) {
  // The scheduler sends /filter only nodes its own resource fit passed with every pod in flight assumed,
  // on the allocatable the count rules read too (managedResources are not ignoredByScheduler): a pod in
  // flight can no longer change whether this pod fits by count. What the scheduler does not count the
  // same way can: a GPU's shared memory (by device), GPUs through claims (counted by the extender's DRA
  // view), and a group's plan (the ledger's room).
  return pod.wants_shared_gpu() || asks_through_claims || group_spec_of(pod, schema).has_value();
}

void begin_scheduling(const VerbContext& ctx, const PodRequest& pod, bool wait_for_binds, VerbSummary& summary) {
  if (ctx.parts.ledger) ctx.parts.ledger->remember_pending(pod);  // /bind will need its requests
  if (!wait_for_binds) return;
  // The pod scored just before this one may be on its way to /bind: judge this one on usage that counts
  // it (usage is read after the wait).
  if (ctx.parts.ledger)
    summary.bind_wait_ms =
        std::chrono::duration<double, std::milli>(ctx.parts.ledger->wait_for_binds_before(pod.uid)).count();
}

void expect_bind(const VerbContext& ctx, const PodRequest& pod) {
  // Waiting for binds makes sense only where this extender binds.
  if (ctx.parts.ledger && ctx.parts.binder) ctx.parts.ledger->expect_bind(pod.uid, ctx.parts.bind_wait);
}

void gather_full_mode(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args) {
  FullModeNodes& full = ws.full;
  const size_t count = args.nodes.size();
  full.inputs.clear();
  full.usage.resize(count);  // sized first: the inputs point into it
  full.slots.assign(count, ViewSnapshot::kNoSlot);
  if (ctx.parts.cluster) {
    // The request's snapshot: every node's usage as of one instant, found by name (a deleted node
    // whose pods are not gone yet still has usage there).
    full.names.clear();
    for (const NodeView& node : args.nodes) full.names.push_back(node.name);
    ws.snapshot.update_and_find(*ctx.parts.cluster, full.names, full.slots, {}, ViewSnapshot::Find::kEntries);
  }
  // Usage comes from the snapshot when the view is the usage source (always, but in tests that give
  // the service another source beside a view).
  const bool from_snapshot = ctx.parts.cluster && ctx.parts.usage.get() == ctx.parts.cluster.get();
  for (size_t i = 0; i < count; ++i) {
    if (!from_snapshot) full.usage[i] = ctx.parts.usage->used_on(args.nodes[i].name);
    else if (full.slots[i] == ViewSnapshot::kNoSlot) full.usage[i] = ResourceAmounts{};
    else full.usage[i] = ws.snapshot.used(full.slots[i]);
    full.inputs.emplace_back(&args.nodes[i], full.usage[i]);
  }
}

void add_live_utilization(const VerbContext& ctx, std::vector<NodeInput>& inputs) {
  if (!ctx.parts.utilization) return;
  const auto now = GpuUtilizationSource::Clock::now();
  for (NodeInput& input : inputs) input.live_gpu_utilization = ctx.parts.utilization->fresh(input.node->name, now);
}

}  // namespace verbs
}  // namespace gpu_extender
