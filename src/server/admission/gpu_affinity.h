#pragma once
// The extender's GPU rules as native required node affinity, for autoscalers that simulate the scheduler
// on a pod's own spec and know nothing of extenders (Karpenter, EKS Auto Mode, GKE's autoscaler).
//
// A pod's GPU annotations (model, memory per GPU, family) become one NodeSelectorTerm per label
// vocabulary a node of the right GPU may carry: the extender's hand labels, GPU Feature Discovery's,
// Karpenter's AWS labels, EKS Auto Mode's and GKE's. Terms are ORed, so a node matching any one
// vocabulary's term qualifies. The count the pod asks is in its resource request already, which
// autoscalers read.
//
// A model becomes `In` over the label values of that vocabulary the extender's own model rule accepts
// (gpu_model_match.h), taken from a catalog of the names each vocabulary uses and from the values the
// nodes in the cluster carry now; memory becomes `Gt` (MiB - 1) where the vocabulary has a memory label,
// and a vocabulary without one gets no term for a pod asking memory (the extender refuses its nodes for
// want of the fact); a family is `In` on the family labels, or, for the autoscalers' vocabularies, the
// catalog's models of that family. So each term admits only nodes the extender accepts.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpu_extender/common/pod_request.h"

namespace gpu_extender::admission {

struct Requirement {
  std::string key, op;  // op: In or Gt
  std::vector<std::string> values;
  bool operator==(const Requirement&) const = default;
};
using Term = std::vector<Requirement>;  // ANDed

// Label values nodes carry now, by label name (e.g. "nvidia.com/gpu.product" -> {"NVIDIA-H100-80GB-HBM3"}).
using SeenValues = std::map<std::string, std::set<std::string>, std::less<>>;

// The terms for a pod's GPU annotations, one per vocabulary that can express them; empty when the pod
// asks no model, memory or family (nothing to add).
std::vector<Term> gpu_affinity_terms(const PodFacts& pod, const SeenValues& seen = {});

}  // namespace gpu_extender::admission
