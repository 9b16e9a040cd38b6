#pragma once
// What every verb works with, and the steps several verbs share. Internal to the verbs.
#include <string>
#include <string_view>

#include "gpu_extender/server/extender_service.h"
#include "server/service/preemptor_memory.h"
#include "server/service/workspace.h"

namespace gpu_extender::verbs {

// The service's parts, lent to one verb call.
struct VerbContext {
  const ServiceParts& parts;
  PreemptorMemory& preemptors;  // /preempt remembers, /filter reads
};

inline constexpr std::string_view kNoNodeCache =
    "NodeNames mode (nodeCacheCapable: true) needs the extender's own node cache, which needs Kubernetes API "
    "access (in a pod, or --kubeconfig); without it, configure the scheduler with nodeCacheCapable: false so "
    "that it sends full Node objects";

// Answers `message` as a JSON Error object with `status`, and notes it in the summary.
int fail(Workspace& ws, int status, std::string_view message, VerbSummary& summary);

std::string pod_label(const PodRequest& pod);  // namespace/name

// Decodes ExtenderArgs from ws.body: nothing else (the steps below are each verb's own calls).
ExtenderArgs& decode_args(Workspace& ws, VerbSummary& summary);

// A pod asking GPUs through DRA claims is judged as one asking that many of the GPU resource: every rule,
// packing, groups, preemption, and what /bind counts in flight until its claim's allocation shows. Reads
// the view's claims into pod.requests (and the device taints they tolerate); true when the claims ask GPUs.
bool add_claimed_gpus(const VerbContext& ctx, PodRequest& pod);

// Whether a pod between /filter and /bind (in flight) can change this pod's /filter verdicts, beyond
// what the scheduler's own resource fit has already judged with it assumed.
bool binds_in_flight_may_change_verdicts(const PodRequest& pod, bool asks_through_claims, const ViewSchema& schema);

// The scheduler's own calls (/filter, /prioritize): notes the pod for /bind, then, with `wait_for_binds`,
// waits for the binds of the pods judged before it (PlacementLedger::wait_for_binds_before), so that it
// is judged on usage that counts them.
void begin_scheduling(const VerbContext& ctx, const PodRequest& pod, bool wait_for_binds, VerbSummary& summary);
// The pod passed /filter or was scored: its /bind is expected, and the next pod's verbs that must see it
// wait for it (only where this extender binds, for at most the bind wait).
void expect_bind(const VerbContext& ctx, const PodRequest& pod);

// Full mode: the request's nodes with their usage, in ws.full (see FullModeNodes).
void gather_full_mode(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args);

// Fresh Prometheus utilisation into the inputs gpuIdle scores (none without --prometheus-url).
void add_live_utilization(const VerbContext& ctx, std::vector<NodeInput>& inputs);

// The verbs, one file each. Each returns the HTTP status; the answer is in ws.answer.
int filter(const VerbContext& ctx, Workspace& ws, VerbSummary& summary);
int prioritize(const VerbContext& ctx, Workspace& ws, VerbSummary& summary);
int bind(const VerbContext& ctx, Workspace& ws, VerbSummary& summary);
int preempt(const VerbContext& ctx, Workspace& ws, VerbSummary& summary);
int explain(const VerbContext& ctx, Workspace& ws, VerbSummary& summary);

}  // namespace gpu_extender::verbs
