#pragma once
// Live GPU utilisation per node, read from Prometheus (the DCGM exporter's DCGM_FI_DEV_GPU_UTIL on a
// GPU Operator cluster) every period on a thread of its own, never on the request path: requests
// read the last snapshot. A node's value is fresh while the query that last returned it is younger
// than `stale_after`; older, scorer gpuIdle falls back as without Prometheus (the node annotation,
// else GPUs in use). Prometheus down or slow costs the requests nothing: it shows in the stats
// (metrics) and in one log line per change of state.
//
// Thread-safe: fresh() and stats() from any thread while the poller runs.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gpu_extender/common/status.h"
#include "gpu_extender/usage/usage_source.h"  // StringHash

namespace gpu_extender {

// One instant-vector answer of /api/v1/query: per node (the Hostname, hostname, node or instance
// label, in that order), the value as a fraction 0..1 (the query gives percent, as DCGM does).
// "" in `error` when the body is a successful vector.
struct PrometheusVector {
  std::map<std::string, double> by_node;
  std::string error;
};
PrometheusVector parse_prometheus_vector(std::string_view body);

class GpuUtilizationSource {
 public:
  using Clock = std::chrono::system_clock;
  struct Options {
    std::string url;         // http(s)://host:port[/prefix] of Prometheus
    std::string token_file;  // bearer token, re-read every query ("" for none)
    std::string ca_file;     // for https ("" for the system's)
    std::chrono::milliseconds period{15000};
    std::chrono::milliseconds stale_after{30000};
    std::chrono::milliseconds timeout{5000};  // per query; below the period
  };
  // `query`: the PromQL, read anew each period (a policy reload changes it).
  GpuUtilizationSource(Options options, std::function<std::string()> query);
  ~GpuUtilizationSource();
  GpuUtilizationSource(const GpuUtilizationSource&) = delete;
  GpuUtilizationSource& operator=(const GpuUtilizationSource&) = delete;

  void start();
  void stop();
  // One query now (the poller does this every period); true when it succeeded.
  bool refresh();

  struct Reading {
    std::optional<double> fresh;     // the value, when fresh
    std::optional<double> last;      // the last value seen, fresh or not
    Clock::time_point seen{};        // when the last value was read
  };
  Reading reading(std::string_view node, Clock::time_point now = Clock::now()) const;
  std::optional<double> fresh(std::string_view node, Clock::time_point now = Clock::now()) const {
    return reading(node, now).fresh;
  }

  struct Stats {
    double seconds_since_success = -1;  // -1: never succeeded
    uint64_t errors = 0;
    size_t nodes = 0;  // in the last successful answer
  };
  Stats stats(Clock::time_point now = Clock::now()) const;
  std::string describe() const;

 private:
  struct Sample {
    double fraction = 0;
    Clock::time_point seen;
  };
  using Snapshot = std::unordered_map<std::string, Sample, StringHash, std::equal_to<>>;
  Result<std::string> fetch(const std::string& query) const;

  Options options_;
  std::function<std::string()> query_;
  std::atomic<std::shared_ptr<const Snapshot>> snapshot_;
  std::atomic<int64_t> last_success_ns_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<size_t> nodes_{0};
  bool failing_ = false;  // the poller's own state, for one log line per change
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread poller_;
};

}  // namespace gpu_extender
