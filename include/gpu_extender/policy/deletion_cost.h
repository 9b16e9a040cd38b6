#pragma once
// Pod deletion costs that keep packing through scale-down (controller.kubernetes.io/pod-deletion-cost:
// a ReplicaSet deletes its lowest-cost pods first, before it looks at how doubled up they are).
//
// A pod the extender places gets a cost that rises with how full its node is in what the pod uses
// (GPUs, the packed resource, shared GPU memory: the fullest of them), in coarse buckets, so pods on
// the emptiest nodes go first and those nodes empty out for the autoscaler; a pod is patched only
// when its bucket changes. The extender marks the costs it writes with a companion annotation and
// never touches a cost it did not write. Thread-safe: pure functions.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/common/node_view.h"
#include "gpu_extender/common/pod_request.h"
#include "gpu_extender/policy/policy_config.h"

namespace gpu_extender {

// The annotations' names are in ViewSchema (pod_deletion_cost_annotation and its companion,
// pod_deletion_cost_written_annotation: the cost the extender last wrote, beside it).

struct DeletionCost {
  int64_t cost = 0;
  int bucket = 0;
  double fullness = 0;    // 0..1, of the resource below, on the pod's node (the pod included)
  std::string resource;   // the managed resource that was fullest
};

// The cost a pod should have, from what it requests and its node's capacity and usage; nullopt when
// the pod uses none of the managed resources the node offers.
std::optional<DeletionCost> deletion_cost(const ResourceAmounts& pod_requests, const NodeView& node,
                                          const ResourceAmounts& used_on_node, const ViewSchema& schema,
                                          const DeletionCostPolicy& policy);

// What to do with a pod's cost annotation: write the desired cost, leave it (already the desired one),
// or leave it forever (set by someone else: the companion annotation is missing or differs).
enum class CostAction { kWrite, kUpToDate, kUserOwned };
CostAction deletion_cost_action(const std::optional<std::string_view>& current,
                                const std::optional<std::string_view>& written, int64_t desired);

const char* to_string(CostAction action);

// A bound pod as the cost keeper sees it (from the cluster view, or a snapshot for `costs`).
struct CostedPod {
  std::string ns, name, uid, node, scheduler_name;
  ResourceAmounts requests;
  std::optional<std::string> current, written;  // the cost annotation and its companion
};

// What the cost keeper needs of a bound pod; null when the pod uses none of the resources costs follow
// (GPUs, the packed resource, shared GPU memory), so the view keeps nothing more for it.
std::shared_ptr<const CostedPod> costed_pod_of(const PodRequest& pod);

// Whether the extender keeps this pod's cost: a pod of one of `schedulers` ("" counts as
// default-scheduler, as the API server defaults it).
bool keeps_cost_of(const CostedPod& pod, const std::vector<std::string>& schedulers);

struct CostDecision {
  DeletionCost desired;
  CostAction action = CostAction::kUpToDate;
};
// The pod's desired cost on its node and what to do; nullopt when it uses no managed resource there.
std::optional<CostDecision> decide_deletion_cost(const CostedPod& pod, const NodeView& node,
                                                 const ResourceAmounts& used_on_node, const PolicyConfig& config);

}  // namespace gpu_extender
