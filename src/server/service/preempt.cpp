// POST /preempt: of the scheduler's candidate nodes, keeps those where the pod would pass the filter
// once their victims are gone. Only shrinks the set: a node with no victims is an error in the scheduler.
//
// A member of a pod group (group_plan.h) keeps none: the scheduler asks for one member at a time, and
// evicting for one member places nothing of a group that is placed whole or not at all (its plan decides
// where each member goes, and a node outside the plan is refused after the eviction anyway). The extender
// makes room for the whole group itself, in one domain (kube/group_preemptor.h).
#include <algorithm>

#include "gpu_extender/policy/gpu_share.h"
#include "gpu_extender/policy/group_plan.h"
#include "gpu_extender/wire/wire_encode.h"
#include "server/service/verb_context.h"

namespace gpu_extender::verbs {
namespace {

using Freed = std::vector<std::pair<std::string_view, ResourceAmounts>>;  // victim UID, what it frees

// For the request log of /preempt: on a kept node, the GPU the pod sharing one would take once the
// victims are gone, and which of them free it ("share-a: GPU 1 freed by uid-a,uid-b; ").
std::string shared_gpu_freed_by(const PodRequest& pod, std::string_view node, const NodeInput& after, const Freed& freed) {
  const std::optional<SharedGpus> gpus = shared_gpus(after);
  if (!gpus) return "";
  const int device = choose_shared_gpu(*gpus, shared_gpu_units_wanted(pod), pod.placement);
  if (device < 0) return "";
  std::string victims;
  const size_t slot = shared_gpu_device_slot(static_cast<size_t>(device));
  for (const auto& [uid, frees] : freed)
    if (frees.has(slot) && frees.get(slot) > 0) victims += (victims.empty() ? "" : ",") + std::string(uid);
  return std::string(node) + ": GPU " + std::to_string(device) + " freed by " + (victims.empty() ? "none" : victims) +
         "; ";
}

// Usage on the candidate's node (`used`, from the request's snapshot) once its victims are gone. A
// victim neither the scheduler's body nor the ledger knows frees nothing here: the node is kept only if
// the pod fits without counting on it.
ResourceAmounts usage_without_victims(const VerbContext& ctx, const PreemptionCandidate& c, ResourceAmounts used,
                                      bool note_freed, Freed& freed) {
  for (const auto& victim : c.victims) {
    std::optional<ResourceAmounts> frees = victim.requests;
    if (!frees) {
      auto known = ctx.parts.ledger->pod_usage(victim.uid);
      if (known && known->first == c.node) frees = known->second;
    }
    if (!frees) continue;
    used.subtract(*frees);
    if (note_freed) freed.emplace_back(victim.uid, *frees);  // for the log line
  }
  return used;
}

}  // namespace

int preempt(const VerbContext& ctx, Workspace& ws, VerbSummary& summary) {
  if (!ctx.parts.cluster) {
    // ExtenderPreemptionResult has no Error field: an Error in a 200 would be dropped and read as
    // "no candidates". A non-200 status fails the preemption attempt visibly instead.
    return fail(ws, 503,
                "preemption needs the extender's node cache and pod view, which need Kubernetes API access; "
                "remove preemptVerb from the scheduler's extender configuration or give the extender API access",
                summary);
  }
  PreemptionArgs& args = ws.decoder.decode_preemption_args(ws.body, ws.policy->schema());
  add_claimed_gpus(ctx, args.pod);  // judged as /filter judges it
  summary.pod = pod_label(args.pod);
  summary.nodes_in = args.candidates.size();
  if (group_spec_of(args.pod, ws.policy->schema())) {
    summary.detail = "a member of group " + PendingPod::group_key_of(args.pod) + ": the extender preempts for its group as a whole (docs/pod-groups.md)";
    encode_preemption_result(args, std::vector<bool>(args.candidates.size(), false), ws.answer);
    return 200;
  }
  std::vector<std::string_view> names;
  for (const auto& c : args.candidates) names.push_back(c.node);
  std::vector<uint32_t> slots;
  ws.snapshot.update_and_find(*ctx.parts.cluster, names, slots);  // the candidates' nodes, as of now

  std::vector<bool> keep(args.candidates.size(), false);
  std::vector<NodeVerdict> verdict;
  for (size_t i = 0; i < args.candidates.size(); ++i) {
    const PreemptionCandidate& c = args.candidates[i];
    // A node returned with no victims is an error in the scheduler; an unknown node cannot be judged.
    if (c.victims.empty() || slots[i] == ViewSnapshot::kNoSlot) continue;
    Freed freed;
    const ResourceAmounts used =
        usage_without_victims(ctx, c, ws.snapshot.used(slots[i]), args.pod.wants_shared_gpu(), freed);
    const NodeInput input{&ws.snapshot.node(slots[i])->view(), &used};
    ws.policy->filter(args.pod, std::span<const NodeInput>(&input, 1), verdict);
    keep[i] = verdict[0].passed();
    if (keep[i] && args.pod.wants_shared_gpu()) summary.detail += shared_gpu_freed_by(args.pod, c.node, input, freed);
  }
  summary.nodes_out = static_cast<size_t>(std::count(keep.begin(), keep.end(), true));
  if (summary.nodes_out > 0) ctx.preemptors.remember(args.pod.uid);  // its victims are about to go
  encode_preemption_result(args, keep, ws.answer);
  return 200;
}

}  // namespace gpu_extender::verbs
