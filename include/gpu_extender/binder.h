#pragma once
// Binding a pod to a node through the Kubernetes API (POST .../pods/NAME/binding).
// Thread-safe: implementations may be called from many request threads at once.
#include <string>

#include "gpu_extender/wire.h"

namespace gpu_extender {

class Binder {
 public:
  virtual ~Binder() = default;
  // "" when the pod is bound to the node (also when it already was), else what went wrong.
  virtual std::string bind(const BindingArgs& args) = 0;
};

}  // namespace gpu_extender
