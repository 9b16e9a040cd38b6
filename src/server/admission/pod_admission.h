#pragma once
// POST /mutate-pods: a mutating admission webhook (admission.k8s.io/v1 AdmissionReview) that writes a GPU
// pod's annotations into its spec as required node affinity (gpu_affinity.h), so that autoscalers launch
// a node the extender will accept.
//
// Which reviews: only the CREATE of a core v1 pod (request.kind v1 Pod, request.resource v1 pods, no
// subresource) is mutated. Any other operation (UPDATE: a pod's affinity cannot change once it exists,
// so a patch would get the update refused; DELETE, which carries no object; CONNECT), kind, resource or
// subresource is allowed unchanged. A review without operation, kind and resource (the API server
// always sends them) is taken as a pod's creation. A dry run is answered exactly as the same review
// without it: the webhook has no side effect (the chart says sideEffects: None).
//
// Which pods: those whose spec.schedulerName is one of the extender's (--scheduler-name); others, and
// pods that ask no model, memory or family, are allowed unchanged. Each vocabulary's term is ANDed with
// each of the pod's own required terms (so the pod still goes nowhere its own affinity forbids), and the
// annotation gpu.nvidia.com/node-affinity-added marks a pod done: a second call (reinvocation, a retried
// create) changes nothing. An own term with no requirement (`{}`, empty lists, `null`) matches no node in
// Kubernetes; it is kept as it is, not ANDed (which would make it match every GPU node), and a pod whose
// required affinity has no term with a requirement matches no node and is left unchanged. A pod whose
// GPU annotations cannot be read is refused with the reason, which names the annotation: it could never
// be placed. Too many combined terms (more than kMaxTerms) leave the pod unchanged, with a warning.
//
// A review that cannot be read is a 400 whose Error names the field: not JSON, nested more than
// kMaxReviewDepth deep, request, uid, object or spec missing, or any field it reads of the wrong type.
#include <string>
#include <vector>

#include "gpu_extender/common/view_schema.h"
#include "server/admission/gpu_affinity.h"

namespace gpu_extender::admission {

inline constexpr size_t kMaxTerms = 64;
// The deepest nesting of arrays and objects a review may have (checked before it is parsed). A real
// pod's review nests under 20 deep (review, request, object, spec, affinity, nodeAffinity, required,
// nodeSelectorTerms, term, matchExpressions, requirement, values: 13; managedFields' fieldsV1 about as
// much), so 128 is six times that. nlohmann's copy, dump and comparison recurse once per level, a few
// hundred bytes of stack each (more under ASan), on the server's worker threads: 128 levels are some
// tens of KiB, where Go's encoding/json limit of 10,000 would take megabytes.
inline constexpr size_t kMaxReviewDepth = 128;
inline constexpr const char* kAddedAnnotation = "gpu.nvidia.com/node-affinity-added";

struct AdmissionAnswer {
  int status = 200;   // 400: the review itself could not be read (body: an Error object)
  std::string body;   // the AdmissionReview with its response
  std::string detail; // for the request log: what was done
};

AdmissionAnswer admit_pod(const std::string& review, const ViewSchema& schema,
                          const std::vector<std::string>& scheduler_names, const SeenValues& seen);

}  // namespace gpu_extender::admission
