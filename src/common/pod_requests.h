#pragma once
// Effective pod requests, as Kubernetes computes them (k8s.io/component-helpers resource.PodRequests):
//   * a container's request of a resource defaults to its limit when only the limit is given (the API
//     server's defaulting, which the scheduler relies on for extended resources);
//   * app containers add up; sidecars (init containers with restartPolicy Always) add to them and to
//     every later init container;
//   * the pod needs the larger of that sum and the largest single init-container step;
//   * spec.overhead is added on top.
// Thread-safe: pure function.
#include <span>

#include "gpu_extender/common/resources.h"

namespace gpu_extender {

struct ContainerResources {
  ResourceAmounts requests;
  ResourceAmounts limits;
  bool restartable_init = false;  // init container with restartPolicy: Always (a sidecar)

  // Request with limits standing in for missing requests.
  ResourceAmounts effective_requests() const;
};

ResourceAmounts effective_pod_requests(std::span<const ContainerResources> containers,
                                       std::span<const ContainerResources> init_containers,
                                       const ResourceAmounts& overhead);

}  // namespace gpu_extender
