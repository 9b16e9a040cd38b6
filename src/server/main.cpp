// gpu-extender: wires the flags, the policy, the usage source and the HTTP server together.
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <pthread.h>
#include <thread>
#include <unistd.h>

#include "gpu_extender/build_info.h"
#include "gpu_extender/cli_options.h"
#include "gpu_extender/http_service.h"
#include "logging.h"

using namespace gpu_extender;

namespace {

std::shared_ptr<const Policy> load_policy(const CliOptions& options) {
  PolicyConfig config = options.policy_file.empty() ? default_policy_config() : load_policy_file(options.policy_file);
  return Policy::build(std::move(config));
}

std::shared_ptr<const UsageSource> load_usage(const CliOptions& options, const Policy& policy) {
  if (options.pods_snapshot_file.empty()) return make_no_usage();
  return PodsSnapshotUsage::load(options.pods_snapshot_file, policy.schema());
}

}  // namespace

int main(int argc, char** argv) {
  const CliParse parsed = parse_cli(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.options) {
    std::cerr << "gpu-extender: " << parsed.error << "\n";
    return 2;
  }
  const CliOptions& options = *parsed.options;
  if (options.help) {
    std::cout << cli_usage();
    return 0;
  }
  if (options.version) {
    std::cout << "gpu-extender " << version() << " (commit " << git_commit() << ")\n";
    return 0;
  }

  // Signals are taken by one thread with sigwait; block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  configure_logging(options.log_level);
  std::shared_ptr<const Policy> policy;
  std::shared_ptr<const UsageSource> usage;
  try {
    policy = load_policy(options);
    usage = load_usage(options, *policy);
  } catch (const std::exception& e) {
    std::cerr << "gpu-extender: " << e.what() << "\n";
    return 2;
  }
  spdlog::info("policy: {}; filters: {}; scorers: {}", policy->config().source, policy->config().filters.size(),
               policy->config().scorers.size());
  spdlog::info("usage source: {}", usage->describe());
  if (options.check_config) {
    std::cout << "configuration ok: policy " << policy->config().source << ", usage " << usage->describe() << "\n";
    return 0;
  }

  auto service = std::make_shared<const ExtenderService>(policy, usage);
  HttpService http(service, options);
  std::string error;
  if (!http.bind(error)) {
    spdlog::error("{}", error);
    return 1;
  }
  std::thread signal_waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    spdlog::info("received {}, stopping", signal == SIGTERM ? "SIGTERM" : "SIGINT");
    http.stop();
  });
  spdlog::info("gpu-extender {} listening on http://{}:{}", version(), options.address, http.port());
  const bool ok = http.serve();
  // serve() may return without a signal (a listen failure): send ourselves one so the waiter exits.
  // SIGTERM is blocked in every thread, so it only reaches the waiter's sigwait.
  kill(getpid(), SIGTERM);
  signal_waiter.join();
  spdlog::info("stopped");
  return ok ? 0 : 1;
}
