#pragma once
// What every verb works with, and the steps several verbs share. Internal to the verbs.
#include <mutex>
#include <string>
#include <string_view>

#include "gpu_extender/server/extender_service.h"
#include "server/service/bind_tracker.h"
#include "server/service/preemptor_memory.h"
#include "server/service/workspace.h"

namespace gpu_extender::verbs {

// The service's parts, lent to one verb call.
struct VerbContext {
  const ServiceParts& parts;
  BindTracker& tracker;
  PreemptorMemory& preemptors;  // /preempt remembers, /filter reads
  std::mutex& shared_gpu_bind_mutex;  // a shared GPU is chosen and assumed under it (bind.cpp)
};

inline constexpr std::string_view kNoNodeCache =
    "NodeNames mode (nodeCacheCapable: true) needs the extender's own node cache, which needs Kubernetes API "
    "access (in a pod, or --kubeconfig); without it, configure the scheduler with nodeCacheCapable: false so "
    "that it sends full Node objects";

// Answers `message` as a JSON Error object with `status`, and notes it in the summary.
int fail(Workspace& ws, int status, std::string_view message, VerbSummary& summary);

std::string pod_label(const PodRequest& pod);  // namespace/name

// Decodes ExtenderArgs. For the scheduler's own calls (`scheduling`: /filter and /prioritize, not
// /explain) notes the pod for /bind, then waits for the bind of the pod scored just before it.
const ExtenderArgs& decode_args(const VerbContext& ctx, Workspace& ws, VerbSummary& summary, bool scheduling);

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
