// POST /bind: checks that the pod is the one scheduled and belongs to this extender's schedulers,
// reserves it on its node in the placement ledger at once (so the next pod's /filter sees it), waits at
// its group's gate when it is a group member, then binds it through the API server; the ledger's
// commit or roll back ends it.
//
// A pod that shares a GPU by memory (gpushare's protocol) gets its device here, as gpushare's extender
// does: chosen and counted in one step of the ledger, so two binds to one node never take the same
// free memory twice, and written into the pod's annotations for the device plugin before the Binding. Across
// replicas the Service's ClientIP session affinity sends one scheduler's binds to one replica, and a
// replica that takes over sees what the others bound through the watch: the pods' own annotations.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>

#include "gpu_extender/state/placement_ledger.h"
#include "gpu_extender/policy/gpu_share.h"
#include "gpu_extender/common/quantity.h"
#include "gpu_extender/wire/wire_encode.h"
#include "server/service/verb_context.h"

namespace gpu_extender::verbs {
namespace {

std::string label_of(const BindingArgs& args) { return args.pod_namespace + "/" + args.pod_name; }

// Why pod `pod` may not be bound to args.node by this extender (done also when it is bound there
// already: a retried /bind whose first answer was lost).
Status refusal_of(const BindingArgs& args, const PendingPod& pod, const std::vector<std::string>& served) {
  const std::string label = label_of(args);
  if (pod.uid != args.pod_uid)
    return Status::failed("cannot bind pod " + label + ": its UID is " + pod.uid + ", not the PodUID " +
                          args.pod_uid + " of this request (the pod was deleted and re-created)");
  if (pod.ns != args.pod_namespace || pod.name != args.pod_name)
    return Status::failed("cannot bind pod " + label + ": PodUID " + args.pod_uid + " belongs to pod " + pod.ns + "/" +
                          pod.name);
  if (!pod.node_name.empty() && pod.node_name != args.node)
    return Status::failed("pod " + label + " is already bound to node " + pod.node_name + ", not " + args.node);
  // The API server defaults an empty schedulerName to default-scheduler.
  const std::string scheduler = pod.scheduler_name.empty() ? "default-scheduler" : pod.scheduler_name;
  if (std::find(served.begin(), served.end(), scheduler) == served.end()) {
    std::string names;
    for (const auto& n : served) names += (names.empty() ? "" : ",") + n;
    return Status::failed("cannot bind pod " + label + ": its schedulerName is " + scheduler +
                          ", and this extender binds only pods of --scheduler-name " + names);
  }
  return Status::done();
}

// Who the pod is: as /filter or /prioritize showed it to this replica, or as the API server has it
// (another replica scored it, or this one restarted since). Empty when it cannot be known, with why.
std::optional<PendingPod> find_pod(const VerbContext& ctx, const BindingArgs& args, Status& refusal) {
  if (args.pod_uid.empty() || args.node.empty() || args.pod_name.empty() || args.pod_namespace.empty()) {
    refusal = Status::failed("cannot bind pod " + label_of(args) +
                             ": PodUID, PodName, PodNamespace and Node are all required (kube-scheduler sends them "
                             "all; the UID makes sure the pod bound is the pod that was scheduled)");
    return std::nullopt;
  }
  std::optional<PendingPod> pod;
  if (ctx.parts.ledger) pod = ctx.parts.ledger->take_pending(args.pod_uid);
  if (!pod) {
    Binder::Fetched fetched = ctx.parts.binder->fetch_pod(args.pod_namespace, args.pod_name);
    pod = std::move(fetched.pod);
    refusal = std::move(fetched.status);
  }
  if (pod) refusal = refusal_of(args, *pod, ctx.parts.scheduler_names);
  else if (refusal.ok()) refusal = Status::failed("cannot bind pod " + label_of(args) + ": the API server did not say who it is");
  return pod;
}

// gpushare's annotations, in the order /bind writes them: the device and the pod's memory (the two
// the decoder reads back, named in the schema), the device's memory, assigned, assume time.
std::array<std::string, 5> shared_gpu_annotation_names(const ViewSchema& schema) {
  return {schema.pod_shared_gpu_index_annotation, "ALIYUN_COM_GPU_MEM_DEV", schema.pod_shared_gpu_memory_annotation,
          "ALIYUN_COM_GPU_MEM_ASSIGNED", "ALIYUN_COM_GPU_MEM_ASSUME_TIME"};
}

// The shared-GPU step: the ledger lets the pod's device on args.node be chosen and reserved in one
// step; the device, and the annotations that tell the device plugin.
Status assume_on_shared_gpu(const VerbContext& ctx, const Policy& policy, const BindingArgs& args,
                            const PendingPod& pod, Binder::Annotations& annotations, int& device) {
  const std::string label = label_of(args);
  if (!ctx.parts.cluster || !ctx.parts.ledger)
    return Status::failed("cannot bind pod " + label + ": sharing a GPU needs the extender's cluster view (Kubernetes API access)");
  bool node_known = false;
  std::optional<SharedGpus> gpus;
  device = -1;
  ctx.parts.ledger->reserve_shared_gpu(
      pod, args.node,
      [&](const std::shared_ptr<const CachedNode>& node, const std::optional<ResourceAmounts>& used)
          -> std::optional<ResourceAmounts> {
        if (!node) return std::nullopt;
        node_known = true;
        const NodeInput input(&node->view(), used);
        gpus = shared_gpus(input);
        ResourceAmounts held = pod.requests;
        device = assign_shared_gpu(input, pod.placement, held);
        if (device < 0) return std::nullopt;
        return held;
      });
  if (!node_known)
    return Status::failed("cannot bind pod " + label + " to " + args.node + ": the node is not in the extender's node cache");
  const std::string& unit = policy.config().shared_gpu_memory_unit;
  const int64_t pod_units = milli_to_units_ceil(pod.requests.get(ViewSchema::kSharedGpuMemory));
  if (device < 0)
    return Status::failed("cannot bind pod " + label + " to " + args.node + ": no GPU there has " +
                          std::to_string(pod_units) + " " + unit + " free" +
                          (gpus ? " (" + describe_shared_gpus(*gpus, unit) + ")" : std::string(" (it shares none)")));
  const auto now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto names = shared_gpu_annotation_names(policy.schema());
  const std::array<std::string, 5> values{std::to_string(device), std::to_string(gpus->per_device),
                                          std::to_string(pod_units), "false", std::to_string(now_ns)};
  annotations.clear();
  for (size_t i = 0; i < names.size(); ++i) annotations.emplace_back(names[i], values[i]);
  return Status::done();
}

// The binding failed: removes the device annotations, so that they claim nothing.
void withdraw_shared_gpu(const VerbContext& ctx, const Policy& policy, const BindingArgs& args) {
  Binder::Annotations removal;
  for (const auto& name : shared_gpu_annotation_names(policy.schema())) removal.emplace_back(name, std::nullopt);
  const Status removed = ctx.parts.binder->annotate(args.pod_namespace, args.pod_name, args.pod_uid, removal);
  if (!removed.ok())
    spdlog::warn("pod {}/{}: its binding failed and its GPU device annotations could not be removed: {}",
                 args.pod_namespace, args.pod_name, removed.why());
}

// The bind flow: who the pod is, count it on its node (on its shared GPU's device), annotate, bind,
// undo on failure.
Status bind_pod(const VerbContext& ctx, const Policy& policy, const BindingArgs& args, VerbSummary& summary) {
  if (!ctx.parts.binder) {
    summary.bind_result = BindResult::kNoApi;
    return Status::failed("cannot bind " + label_of(args) + " to " + args.node +
                          ": this extender has no Kubernetes API access configured; remove bindVerb from the "
                          "scheduler's extender configuration or give the extender API access");
  }
  if (!ctx.parts.bind_refusal.empty()) {
    summary.bind_result = BindResult::kRefused;
    return Status::failed("cannot bind " + label_of(args) + " to " + args.node + ": " + ctx.parts.bind_refusal);
  }
  Status refusal = Status::done();
  const std::optional<PendingPod> pod = find_pod(ctx, args, refusal);
  const bool bound_already = refusal.ok() && !pod->node_name.empty();
  PlacementLedger* ledger = ctx.parts.ledger.get();
  if (!refusal.ok() || bound_already) {
    if (ledger) ledger->bind_answered(args.pod_uid);
    summary.bind_result = refusal.ok() ? BindResult::kBound : BindResult::kRefused;
    return refusal;
  }
  // Reserve the pod on its node before the API call, so that the next pod's /filter and /prioritize
  // (which may be waiting for this very moment: the ledger says its bind arrived in the same step) see
  // it; a group member takes its slot in the same step. The next pod waits for this, not for the gate.
  const bool shares_gpu = pod->requests.has(ViewSchema::kSharedGpuMemory) && pod->requests.get(ViewSchema::kSharedGpuMemory) > 0;
  Binder::Annotations device;
  int shared_gpu = -1;
  Status bound = Status::done();
  if (shares_gpu) bound = assume_on_shared_gpu(ctx, policy, args, *pod, device, shared_gpu);
  else if (ledger) ledger->reserve(*pod, args.node, pod->requests);
  // Not reserved (no GPU had the memory): nothing for the next pod's verbs to wait for.
  if (!bound.ok() && ledger) ledger->bind_answered(args.pod_uid);
  // A member waits at its group's gate until every member has passed: all of a group bind, or none.
  if (bound.ok() && ledger) {
    const GroupBook::Gate gate = ledger->wait_at_gate(*pod);
    if (!gate.ok) bound = Status::failed("cannot bind pod " + label_of(args) + " to " + args.node + ": " + gate.reason);
  }
  if (bound.ok() && !device.empty()) bound = ctx.parts.binder->annotate(args.pod_namespace, args.pod_name, args.pod_uid, device);
  const bool annotated = bound.ok() && !device.empty();
  if (bound.ok()) bound = ctx.parts.binder->bind(args);
  summary.bind_result = bound.ok() ? BindResult::kBound : BindResult::kFailed;
  // The undo: the device annotations withdrawn, then the ledger's one step (the group's slot held
  // again, the pod no longer counted on its node).
  if (!bound.ok() && annotated) withdraw_shared_gpu(ctx, policy, args);
  if (ledger && bound.ok()) ledger->commit(*pod);
  if (ledger && !bound.ok()) ledger->roll_back(*pod);
  if (shares_gpu && bound.ok()) {
    summary.shared_gpu_device = shared_gpu;
    summary.detail = "GPU " + std::to_string(shared_gpu) + " of " + args.node;
  }
  return bound;
}

AnswerError cause_of(BindResult result) {
  switch (result) {
    case BindResult::kNoApi: return AnswerError::kBindNoApi;
    case BindResult::kRefused: return AnswerError::kBindRefused;
    default: return AnswerError::kBindFailed;
  }
}

}  // namespace

int bind(const VerbContext& ctx, Workspace& ws, VerbSummary& summary) {
  const BindingArgs args = ws.decoder.decode_binding_args(ws.body);
  summary.pod = label_of(args);
  summary.nodes_in = 1;
  const Status bound = bind_pod(ctx, *ws.policy, args, summary);
  if (bound.ok()) {
    summary.nodes_out = 1;
  } else {
    summary.error = bound.why();
    summary.error_cause = cause_of(summary.bind_result);
  }
  encode_error_object(bound.why(), ws.answer);
  return 200;
}

}  // namespace gpu_extender::verbs
