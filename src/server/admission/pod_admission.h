#pragma once
// POST /mutate-pods: a mutating admission webhook (admission.k8s.io/v1 AdmissionReview) that writes a GPU
// pod's annotations into its spec as required node affinity (gpu_affinity.h), so that autoscalers launch
// a node the extender will accept.
//
// Which pods: those whose spec.schedulerName is one of the extender's (--scheduler-name); others, and
// pods that ask no model, memory or family, are allowed unchanged. Each vocabulary's term is ANDed with
// each of the pod's own required terms (so the pod still goes nowhere its own affinity forbids), and the
// annotation gpu.nvidia.com/node-affinity-added marks a pod done: a second call (reinvocation, a retried
// create) changes nothing. A pod whose GPU annotations cannot be read is refused with the reason, which
// names the annotation: it could never be placed. Too many combined terms (more than kMaxTerms) leave the
// pod unchanged, with a warning.
#include <string>
#include <vector>

#include "gpu_extender/common/view_schema.h"
#include "server/admission/gpu_affinity.h"

namespace gpu_extender::admission {

inline constexpr size_t kMaxTerms = 64;
inline constexpr const char* kAddedAnnotation = "gpu.nvidia.com/node-affinity-added";

struct AdmissionAnswer {
  int status = 200;   // 400: the review itself could not be read (body: an Error object)
  std::string body;   // the AdmissionReview with its response
  std::string detail; // for the request log: what was done
};

AdmissionAnswer admit_pod(const std::string& review, const ViewSchema& schema,
                          const std::vector<std::string>& scheduler_names, const SeenValues& seen);

}  // namespace gpu_extender::admission
