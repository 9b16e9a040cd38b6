// Scheduling throughput with the extender in the loop: the kube-scheduler stand-in of the tests
// (tests/integration/scheduler_driver.h: filter and prioritize of pod i+1 while pod i binds, the
// extender binding through a fake API server over TLS) places PODS pods of 1 GPU on NODES A100 nodes
// of 8 GPUs, in full mode and in names mode. Prints pods/s, the time the extender adds to one
// scheduling cycle (its /filter + /prioritize round trips as the driver sees them), and /bind; the
// extender process's CPU per placed pod (/proc), what it asked of the API server per placed pod, and
// how many connections the stand-in opened to it.
// Usage: [PERCENTAGE=P] [UTILIZATION=1] scheduler_bench [NODES [PODS [names|full]]]
//        (default 500 nodes, 500 pods, both modes). UTILIZATION=1: each node reports a GPU utilisation
//        (the gpu.nvidia.com/utilization annotation, node i at (37 i mod 100)%), as nodes fed by DCGM
//        do: the scores spread over many levels and most nodes score 0. Without it every empty node
//        scores the same, and /prioritize lists them all.
// Stops with exit 1 when any pod is not placed or the extender's log lacks a figure.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <string_view>
#include <iterator>
#include <unistd.h>
#include <sstream>

#include "../tests/integration/extender_process.h"
#include "../tests/integration/fake_api_server.h"
#include "../tests/integration/scheduler_driver.h"
#include "bench_support.h"

using nlohmann::json;

namespace {

// User and system CPU seconds of process `pid` so far (/proc/PID/stat fields 14 and 15).
struct CpuSeconds {
  double user = 0, system = 0;
  double total() const { return user + system; }
};
CpuSeconds cpu_seconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
  std::string field;
  CpuSeconds out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) out.user = std::stod(field) / tick;
    if (i == 15) out.system = std::stod(field) / tick;
  }
  return out;
}

// On-CPU time of process `pid` so far, summed over its threads (/proc/PID/task/*/schedstat): the
// scheduler's own accounting, finer than /proc/PID/stat's clock ticks (10 ms, a tenth of a 300-pod
// burst's figure), and how many times its threads were put on a CPU (each a context switch in: a
// wake-up, or a return after being preempted). The count moves far less with the hour than the time.
struct OnCpu {
  double seconds = 0;
  double timeslices = 0;
};
OnCpu on_cpu(pid_t pid) {
  OnCpu out;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream schedstat(task.path() / "schedstat");
    double ns = 0, waited_ns = 0, slices = 0;
    if (schedstat >> ns >> waited_ns >> slices) {
      out.seconds += ns / 1e9;
      out.timeslices += slices;
    }
  }
  return out;
}

// What the extender asked of the API server while the pods were placed, per placed pod.
void print_traffic(const test_support::FakeApiServer::Traffic& before, const test_support::FakeApiServer::Traffic& after,
                   size_t placed) {
  const double n = static_cast<double>(placed);
  std::printf("  asked of the API server per placed pod:");
  for (const auto& [kind, count] : after.requests) {
    const auto was = before.requests.count(kind) ? before.requests.at(kind) : 0;
    if (count > was) std::printf(" %s %.2f,", kind.c_str(), static_cast<double>(count - was) / n);
  }
  std::printf(" TCP connections opened %.3f, bytes in %.0f, out %.0f, watch events %.2f\n",
              static_cast<double>(after.connections - before.connections) / n,
              static_cast<double>(after.bytes_in - before.bytes_in) / n,
              static_cast<double>(after.bytes_out - before.bytes_out) / n,
              static_cast<double>(after.watch_events - before.watch_events) / n);
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 500;
  const int pods = argc > 2 ? std::atoi(argv[2]) : 500;
  const std::string only = argc > 3 ? argv[3] : "";  // "names" or "full": that mode alone
  for (const bool names_mode : {true, false}) {
    if (!only.empty() && only != (names_mode ? "names" : "full")) continue;
    test_support::FakeApiServer api;
    const char* utilization_env = std::getenv("UTILIZATION");
    const bool utilization = utilization_env != nullptr && std::string_view(utilization_env) == "1";
    for (int i = 0; i < nodes; ++i) {
      json node = test_support::make_node("gpu-" + std::to_string(i), "A100", 8);
      if (utilization)
        node["metadata"]["annotations"]["gpu.nvidia.com/utilization"] = std::to_string(37 * i % 100 / 100.0);
      api.put_node(node);
    }
    test_support::ExtenderProcess extender(api.extender_args());
    httplib::Client probe("127.0.0.1", extender.port());
    while (true) {
      auto res = probe.Get("/readyz");
      if (res && res->status == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::vector<json> batch;
    for (int i = 0; i < pods; ++i) {
      batch.push_back(test_support::pending_pod("p-" + std::to_string(i), 1, 0));
      api.put_pod(batch.back());
    }
    test_support::DriverOptions options;
    options.node_cache_capable = names_mode;
    // percentageOfNodesToScore: PERCENTAGE in the environment (100, as GPU clusters often set it), else
    // kube-scheduler's adaptive default (230 of 500 nodes, 500 of 5,000).
    if (const char* percentage = std::getenv("PERCENTAGE")) options.percentage_of_nodes_to_score = std::atoi(percentage);
    test_support::SchedulerDriver driver(api, extender.port(), options);
    const test_support::FakeApiServer::Traffic traffic_before = api.traffic();
    const CpuSeconds cpu_before = cpu_seconds(extender.pid());
    const OnCpu extender_before = on_cpu(extender.pid());
    const double own_before = on_cpu(getpid()).seconds;
    const auto placements = driver.schedule(batch);
    const CpuSeconds cpu_after = cpu_seconds(extender.pid());
    const OnCpu extender_after = on_cpu(extender.pid());
    const double cpu_spent = extender_after.seconds - extender_before.seconds;
    const double own_spent = on_cpu(getpid()).seconds - own_before;
    const test_support::FakeApiServer::Traffic traffic_after = api.traffic();
    size_t placed = 0;
    for (const auto& p : placements) placed += p.error.empty();
    // Pods/s over pods that failed would be the speed of failing: every pod must be placed.
    for (const auto& p : placements)
      if (!p.error.empty()) {
        std::fprintf(stderr, "benchmark stopped: %zu of %d pods placed; %s: %s\n", placed, pods, p.pod.c_str(),
                     p.error.c_str());
        return 1;
      }
    const auto& t = driver.timings();
    const double per_pod_ms = t.seconds * 1000.0 / pods;
    const double extender_p50 = bench::percentile(t.extender_ms, 0.5);
    std::printf("%s mode, %d nodes, %d pods: %zu placed, %.1f pods/s (%.2f ms a pod, driver's own work included)\n",
                names_mode ? "names" : "full", nodes, pods, placed, pods / t.seconds, per_pod_ms);
    std::printf("  extender per cycle (filter + prioritize round trips): p50 %.3f ms, p90 %.3f ms\n", extender_p50,
                bench::percentile(t.extender_ms, 0.9));
    std::printf("  the extender's CPU (on-CPU time of its threads, /proc): %.3f s, %.3f ms per placed pod (user %.2f s, system %.2f s)\n",
                cpu_spent, cpu_spent * 1000.0 / static_cast<double>(placed), cpu_after.user - cpu_before.user,
                cpu_after.system - cpu_before.system);
    std::printf("  the extender's threads were put on a CPU %.2f times per placed pod (woken, or back after a preemption)\n",
                (extender_after.timeslices - extender_before.timeslices) / static_cast<double>(placed));
    // The machine's speed changes from one hour to the next; the ratio to this process's own CPU (the
    // scheduler stand-in and the fake API server, as kube-scheduler and the API server are on a real
    // control plane) changes less.
    std::printf("  this process's CPU (the stand-in and the fake API server): %.3f s; the extender's is %.3f of it\n",
                own_spent, own_spent > 0 ? cpu_spent / own_spent : 0.0);
    print_traffic(traffic_before, traffic_after, placed);
    // As kube-scheduler's transport keeps at most two idle, binds in flight beside the cycle's
    // requests open new ones (on the real control plane ~0.2 a placed pod).
    std::printf("  connections the stand-in opened to the extender: %zu, %.3f per placed pod\n",
                driver.extender_connections(), static_cast<double>(driver.extender_connections()) / static_cast<double>(placed));
    std::printf("  filter p50 %.3f ms, prioritize p50 %.3f ms, bind p50 %.3f ms (off the cycle)\n",
                bench::percentile(t.filter_ms, 0.5), bench::percentile(t.prioritize_ms, 0.5),
                bench::percentile(t.bind_ms, 0.5));
    // From the extender's request log: its own time per verb, and how long /filter waited for the
    // previous pod's /bind to arrive (the price of scoring bursts on fresh placements).
    // The request log is written in batches (batched_log_sink.h): a short run may end before its lines are.
    auto lines_of = [](const std::string& text, const std::string& marker) {
      size_t n = 0;
      for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) ++n;
      return n;
    };
    std::string log = extender.log();
    for (int i = 0; i < 100 && (lines_of(log, "verb=filter ") < t.filter_ms.size() ||
                                lines_of(log, "verb=prioritize ") < t.prioritize_ms.size()); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      log = extender.log();
    }
    // A verb the run never called (one feasible node a pod: the scheduler skips /prioritize) has no figure:
    // "n/a", never a p50 of 0, and never an early exit (which would leave the extender process running).
    std::vector<std::string> figures;  // kept: the printf below reads their c_str()
    figures.reserve(16);
    auto field = [&](const char* verb, const char* key, int decimals = 3) -> const char* {
      std::vector<double> values;
      const std::string marker = std::string("verb=") + verb + " ";
      for (size_t at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1)) {
        const size_t end = log.find('\n', at);
        const size_t k = log.find(key, at);
        if (k != std::string::npos && k < end) values.push_back(std::atof(log.c_str() + k + std::strlen(key)));
      }
      char text[32] = "n/a";
      if (!values.empty()) std::snprintf(text, sizeof text, "%.*f", decimals, bench::percentile(values, 0.5));
      figures.emplace_back(text);
      return figures.back().c_str();
    };
    std::printf("  inside the extender (request log): filter p50 %s ms (of which reading the body %s ms, waiting "
                "for the previous bind %s ms), prioritize p50 %s ms (of which reading the body %s ms)\n",
                field("filter", " ms="), field("filter", "read_ms="), field("filter", "bind_wait_ms="),
                field("prioritize", " ms="), field("prioritize", "read_ms="));
    std::printf("  answer bytes p50: filter %s, prioritize %s (request bytes p50: %s, %s)\n",
                field("filter", "bytes_out=", 0), field("prioritize", "bytes_out=", 0), field("filter", "bytes_in=", 0),
                field("prioritize", "bytes_in=", 0));
  }
  return 0;
}
