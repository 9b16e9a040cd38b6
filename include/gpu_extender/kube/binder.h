#pragma once
// Binding a pod to a node through the Kubernetes API (POST .../pods/NAME/binding).
// Thread-safe: implementations may be called from many request threads at once.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu_extender/common/pod_request.h"
#include "gpu_extender/common/status.h"
#include "gpu_extender/wire/wire.h"

namespace gpu_extender {

class Binder {
 public:
  virtual ~Binder() = default;
  // Done when the pod is bound to the node (also when it already was), else what went wrong.
  virtual Status bind(const BindingArgs& args) = 0;

  struct Fetched {
    std::optional<PendingPod> pod;  // the pod as the API server has it now
    Status status = Status::done();  // else why it could not be read ("not found", "HTTP 503")
  };
  // The pod named in a /bind that this replica never saw in /filter or /prioritize.
  virtual Fetched fetch_pod(const std::string& ns, const std::string& name) = 0;

  // Sets (a value) or removes (nullopt) annotations of pod ns/name, whose UID must be `uid`; done, or
  // what went wrong. For GPU sharing: the device the pod's memory is on, for the device
  // plugin, written before the Binding.
  using Annotations = std::vector<std::pair<std::string, std::optional<std::string>>>;
  virtual Status annotate(const std::string& ns, const std::string& name, const std::string& uid,
                               const Annotations& annotations) = 0;
};

}  // namespace gpu_extender
