#pragma once
// The parts of a running gpu-extender, built from its flags and connected to one another: one policy
// holder that the service, the policy watcher, the deletion-cost writer and the utilisation poller all
// read, the Kubernetes connection (or a pods snapshot, or nothing), the service, its metrics and the
// HTTP server. main() builds them, starts them, serves and stops them.
#include <memory>
#include <stdexcept>

#include "gpu_extender/server/extender_service.h"
#include "gpu_extender/usage/gpu_utilization.h"
#include "gpu_extender/kube/kube_connection.h"
#include "gpu_extender/policy/policy_holder.h"
#include "app/cli_options.h"
#include "server/transport/http_service.h"
#include "server/observability/metrics.h"
#include "server/service/policy_watcher.h"

namespace gpu_extender {

// A flag combination or a file that cannot work: main prints it and exits 2.
struct ConfigurationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Wiring {
 public:
  // Builds every part (nothing runs yet); throws ConfigurationError, PolicyError or what a part throws.
  explicit Wiring(const CliOptions& options);
  ~Wiring();
  // Starts the watch, the poller and the policy watcher (the HTTP server is bound and served by main).
  void start();
  void stop();

  const std::shared_ptr<const ExtenderService>& service() const { return service_; }
  HttpService& http() { return *http_; }

 private:
  const CliOptions& options_;
  std::shared_ptr<PolicyHolder> policies_;
  std::unique_ptr<KubeConnection> kube_;
  std::shared_ptr<GpuUtilizationSource> utilization_;
  std::shared_ptr<const ExtenderService> service_;
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<HttpService> http_;
  std::unique_ptr<PolicyWatcher> policy_watcher_;
};

}  // namespace gpu_extender
