// gpu-extender: the tools (explain, simulate, costs), or the service: its flags, its parts (wiring.h),
// and a graceful stop on SIGTERM.
#include <malloc.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <thread>

#include "gpu_extender/common/build_info.h"
#include "server/observability/logging.h"
#include "tools/tools.h"
#include "wiring.h"

using namespace gpu_extender;

namespace {

// explain, simulate, costs, probe: a tool's exit code, or -1 when argv names none.
int run_tool(int argc, char** argv) {
  // Installed as kubectl-gpu_extender, kubectl runs it as `kubectl gpu-extender ...`.
  const std::string self = argv[0];
  if (self.substr(self.rfind('/') + 1).rfind("kubectl-gpu_extender", 0) == 0)
    return run_kubectl_plugin(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  if (argc < 2) return -1;
  const std::string name = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (name == "explain") return run_explain(args, std::cout, std::cerr);
  if (name == "simulate") return run_simulate(args, std::cout, std::cerr);
  if (name == "costs") return run_costs(args, std::cout, std::cerr);
  if (name == "probe") return run_probe(args, std::cout, std::cerr);
  return -1;
}

// Signals are taken by one thread with sigwait: blocked before any other thread starts.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Graceful stop on the first SIGTERM or SIGINT: report unready at once so endpoints drop this
// replica, keep serving what still arrives during the drain period, then stop accepting; in-flight
// requests finish before exit. A second signal cuts the drain short.
void drain_on_signal(sigset_t signals, const std::atomic<bool>& serving, Wiring& wiring, const CliOptions& options) {
  int signal = 0;
  sigwait(&signals, &signal);
  if (!serving) return;  // serve() ended on its own
  wiring.service()->begin_draining();
  spdlog::info("received {}: unready now, draining for {}s, then stopping", signal == SIGTERM ? "SIGTERM" : "SIGINT",
               options.shutdown_drain_seconds);
  const timespec drain{options.shutdown_drain_seconds, 0};
  sigtimedwait(&signals, nullptr, &drain);
  wiring.http().stop();
}

int serve(const CliOptions& options) {
  // glibc gives every thread that allocates its own malloc arena; under many concurrent connections
  // their fragmentation made resident memory creep (31 -> 47 MiB in 30 s at concurrency 64, flat at
  // ~32 MiB with one arena). The hot path reuses its buffers, so two arenas cost no measurable speed.
  mallopt(M_ARENA_MAX, 2);
  const sigset_t signals = block_stop_signals();
  configure_logging(options.log_level, options.log_format);
  std::unique_ptr<Wiring> wiring;
  try {
    wiring = std::make_unique<Wiring>(options);
  } catch (const std::exception& e) {
    std::cerr << "gpu-extender: " << e.what() << "\n";
    return 2;
  }
  if (options.check_config) {
    std::cout << "configuration ok: policy " << wiring->service()->policy()->config().source << ", usage "
              << wiring->service()->usage().describe() << "\n";
    return 0;
  }
  wiring->start();
  if (const Status bound = wiring->http().bind(); !bound.ok()) {
    spdlog::error("{}", bound.why());
    return 1;
  }
  std::atomic<bool> serving{true};
  std::thread signal_waiter([&] { drain_on_signal(signals, serving, *wiring, options); });
  spdlog::info("gpu-extender {} listening on {}://{}:{}{}", version(), options.server.tls_cert_file.empty() ? "http" : "https",
               options.server.address, wiring->http().port(),
               options.server.tls_client_ca_file.empty() ? "" : " (client certificates required)");
  const bool ok = wiring->http().serve();
  serving = false;
  // serve() may return without a signal (a listen failure): send ourselves one so the waiter exits.
  // SIGTERM is blocked in every thread, so it only reaches the waiter's sigwait.
  kill(getpid(), SIGTERM);
  signal_waiter.join();
  wiring->stop();
  spdlog::info("stopped");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // A peer that goes away while OpenSSL writes to it (it writes without MSG_NOSIGNAL: a client of the
  // verb port, or the API server under the API client, the tools' included) must cost that
  // connection, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  if (const int tool = run_tool(argc, argv); tool >= 0) return tool;
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
  return serve(options);
}
