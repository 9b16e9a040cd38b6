#pragma once
// Binder over the API server: creates the v1.Binding, retries 5xx and transport errors with backoff
// inside a deadline, and turns each refusal into an error a person can act on.
#include <chrono>
#include <memory>

#include "gpu_extender/kube/api_client.h"
#include "gpu_extender/kube/binder.h"
#include "gpu_extender/common/view_schema.h"

namespace gpu_extender::kube {

class ApiBinder final : public Binder {
 public:
  ApiBinder(std::shared_ptr<const ApiClient> api, ViewSchema schema,
            std::chrono::milliseconds deadline = std::chrono::seconds(4));
  Status bind(const BindingArgs& args) override;
  Fetched fetch_pod(const std::string& ns, const std::string& name) override;
  Status annotate(const std::string& ns, const std::string& name, const std::string& uid,
                       const Annotations& annotations) override;

 private:
  std::shared_ptr<const ApiClient> api_;
  ViewSchema schema_;
  std::chrono::milliseconds deadline_;
};

// The merge patch of annotate(): metadata.uid makes it a precondition (the API server refuses to
// change an object's UID), the annotations set or removed (exposed for tests).
std::string annotations_patch_json(const std::string& uid, const Binder::Annotations& annotations);

// The v1.Binding body (exposed for tests).
std::string binding_json(const BindingArgs& args);

}  // namespace gpu_extender::kube
