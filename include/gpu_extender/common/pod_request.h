#pragma once
// The parts of a Kubernetes Pod that the extender reads: identity, GPU annotations, and the effective
// requests of the tracked resources (computed as Kubernetes computes them, see pod_requests.h).
//
// Identity strings are views into the decoder's storage (valid while the decoder's current document
// is); the facts the rules read own theirs (they are short, and names mode keeps them).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/common/device_taint.h"
#include "gpu_extender/common/resources.h"
#include "gpu_extender/common/view_schema.h"

namespace gpu_extender {

// Where a pod wants to go, by its placement annotation: binpack fills the fullest device or node that
// fits (so whole GPUs stay free for large jobs), spread takes the emptiest.
enum class Placement : uint8_t { kBinpack, kSpread };

// What the rules read of a pod: its effective requests and the annotations that ask for a kind of GPU
// or a placement. Predicates and scorers are given this and nothing else, so two pods with equal facts
// get the same verdict and scores on every node, whatever their names (a ReplicaSet's pods, one after
// another): names mode keeps verdicts by these facts, compared whole (operator==). A rule that needs
// another field of the pod adds it here, and the comparison takes it in by itself.
struct PodFacts {
  ResourceAmounts requests;  // effective pod requests, milli-units
  std::optional<std::string> gpu_model;   // annotation: one model or a comma-separated list
  std::optional<int64_t> gpu_memory_mib;  // annotation: MiB per GPU
  std::optional<std::string> gpu_family;  // annotation: one architecture or a list ("ampere,hopper")
  Placement placement = Placement::kBinpack;  // annotation
  // Set when an annotation the policy reads cannot be understood: every node refuses the pod with
  // this reason (unresolvable). Bound pods with one still count their requests.
  std::string invalid_reason;
  // DRA: the device taints its GPU claims tolerate (ClusterView::add_claimed_gpus), for filter gpuCount.
  std::vector<DeviceToleration> device_tolerations;

  int64_t requested(size_t resource) const { return requests.has(resource) ? requests.get(resource) : 0; }
  int64_t gpus_milli() const { return requested(ViewSchema::kGpuResource); }
  bool wants_gpus() const { return gpus_milli() > 0; }
  bool wants_packed_resource() const { return requested(ViewSchema::kPackedResource) > 0; }
  int64_t shared_gpu_memory_milli() const { return requested(ViewSchema::kSharedGpuMemory); }
  bool wants_shared_gpu() const { return shared_gpu_memory_milli() > 0; }

  bool operator==(const PodFacts&) const = default;
};

// What a pod says of the group it belongs to (ViewSchema's group keys), as written: parsed and checked
// by group_plan.h (a bad value refuses the pod with a reason, as a bad GPU annotation does).
struct PodGroupRef {
  std::optional<std::string_view> name;  // the group, within the pod's namespace
  std::optional<std::string_view> size;  // how many pods it has in all
  std::optional<std::string_view> required_topology, preferred_topology;  // a level's label
  std::string_view size_key, required_key, preferred_key;  // which annotation each came from
  bool member() const { return name && !name->empty(); }
};

// A pod as the decoders read it: who it is and where it stands, and its facts.
struct PodRequest : PodFacts {
  std::string_view name;
  std::string_view ns;
  std::string_view uid;
  std::string_view resource_version;  // metadata.resourceVersion (watch bookkeeping)
  std::string_view node_name;  // spec.nodeName: set for bound pods (usage snapshots, watches)
  std::string_view phase;      // status.phase
  std::string_view scheduler_name;  // spec.schedulerName ("" when absent: the API server's default applies)
  // metadata.deletionTimestamp is set: the pod is on its way out (drained, evicted, deleted). It still
  // holds its resources until it is gone, but no longer counts as a member of its group: the
  // controller's replacement takes its place.
  bool terminating = false;
  // In one of Kubernetes' own pod groups (spec.schedulingGroup, 1.36+; spec.workloadRef, 1.35): with
  // GenericWorkload on, kube-scheduler places it in a pod-group cycle, filtering every member against
  // each candidate placement and binding none before one is chosen.
  bool native_pod_group = false;
  // DRA: the claims the pod asks through (spec.resourceClaims), each by the claim's name or the template
  // its claim is made from. What they request is read from the cluster view (ClusterView::claimed_gpus_of).
  struct ClaimRef {
    std::string_view claim, claim_template;  // one of the two is set
  };
  std::vector<ClaimRef> claims;

  // GPU sharing: the device a bound pod's shared memory is on (gpushare's ALIYUN_COM_GPU_MEM_IDX).
  // Its memory is then also counted in requests' slot shared_gpu_device_slot(device).
  std::optional<int> shared_gpu_device;
  // Pod deletion cost (deletion_cost.h): the annotation, and the companion saying the extender wrote it.
  std::optional<std::string_view> deletion_cost, deletion_cost_written;
  PodGroupRef group;  // not a fact: a group's members are judged as one (group_plan.h), above the rules
  // spec.priority (the API server's Priority admission resolves the class into it; 0 when absent) and
  // spec.preemptionPolicy: Never. Not facts: group preemption (group_preemption.h) reads them.
  int32_t priority = 0;
  bool never_preempts = false;

  const PodFacts& facts() const { return *this; }
  // A pod that finished no longer holds its resources (Kubernetes' scheduler cache drops it too).
  bool terminated() const { return phase == "Succeeded" || phase == "Failed"; }
};

// What /bind needs to know of a pod, owned: who it is, which scheduler it belongs to, whether it is
// bound already, and what it will hold on its node. Kept from /filter and /prioritize, or read from
// the API server by a replica that did not see those.
struct PendingPod {
  std::string ns, name, uid;
  std::string scheduler_name;  // "" when the pod did not say (the API server defaults it)
  std::string node_name;       // set when the pod is bound already
  ResourceAmounts requests;
  Placement placement = Placement::kBinpack;  // which device /bind gives its shared GPU memory
  std::string group{};  // "namespace/name" of its group; "" outside groups

  static PendingPod of(const PodRequest& pod) {
    return {std::string(pod.ns),        std::string(pod.name), std::string(pod.uid), std::string(pod.scheduler_name),
            std::string(pod.node_name), pod.requests,          pod.placement,        group_key_of(pod)};
  }
  // "namespace/name" of the pod's group, "" when it is in none.
  static std::string group_key_of(const PodRequest& pod) {
    return pod.group.member() ? std::string(pod.ns) + "/" + std::string(*pod.group.name) : std::string();
  }
  // The group a bound pod counts toward as a member: its group, unless it is terminating.
  static std::string member_of(const PodRequest& pod) { return pod.terminating ? std::string() : group_key_of(pod); }
};

}  // namespace gpu_extender
