#include "pod_requests.h"

namespace gpu_extender {

ResourceAmounts ContainerResources::effective_requests() const {
  ResourceAmounts out = requests;
  for (size_t i = 0; i < kMaxTrackedResources; ++i)
    if (!out.has(i) && limits.has(i)) out.set(i, limits.get(i));
  return out;
}

ResourceAmounts effective_pod_requests(std::span<const ContainerResources> containers,
                                       std::span<const ContainerResources> init_containers,
                                       const ResourceAmounts& overhead) {
  ResourceAmounts pod;
  for (const ContainerResources& c : containers) pod.add(c.effective_requests());

  ResourceAmounts sidecars;   // running total of restartable init containers started so far
  ResourceAmounts init_peak;  // the largest amount any init step needs
  for (const ContainerResources& c : init_containers) {
    ResourceAmounts step = c.effective_requests();
    if (c.restartable_init) {
      pod.add(step);  // a sidecar keeps running beside the app containers
      sidecars.add(step);
      step = sidecars;
    } else {
      step.add(sidecars);  // a plain init container runs beside the sidecars started before it
    }
    init_peak.max_with(step);
  }
  pod.max_with(init_peak);
  pod.add(overhead);
  return pod;
}

}  // namespace gpu_extender
