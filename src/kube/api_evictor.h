#pragma once
// Evictor over the API server: policy/v1 Eviction with the pod's UID as precondition, and a core/v1
// Event on the pod for each one.
#include <chrono>
#include <memory>
#include <string>

#include "gpu_extender/kube/api_client.h"
#include "gpu_extender/kube/evictor.h"

namespace gpu_extender::kube {

class ApiEvictor final : public Evictor {
 public:
  // `instance`: who reports the events (the pod's name, or the host's).
  ApiEvictor(std::shared_ptr<const ApiClient> api, std::string instance,
             std::chrono::milliseconds timeout = std::chrono::seconds(5));
  Result evict(const PreemptionVictim& victim, bool dry_run) override;
  void record_preempted(const PreemptionVictim& victim, const std::string& message) override;

 private:
  std::shared_ptr<const ApiClient> api_;
  std::string instance_;
  std::chrono::milliseconds timeout_;
};

// The bodies (exposed for tests).
std::string eviction_json(const PreemptionVictim& victim);
std::string preempted_event_json(const PreemptionVictim& victim, const std::string& message, const std::string& instance,
                                 const std::string& timestamp);

}  // namespace gpu_extender::kube
