#include "server/observability/process_metrics.h"

#include <dirent.h>
#include <prometheus/metric_family.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gpu_extender {
namespace {

prometheus::MetricFamily single(const std::string& name, const std::string& help, prometheus::MetricType type,
                                double value) {
  prometheus::MetricFamily family{name, help, type, {}};
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) metric.counter.value = value;
  else metric.gauge.value = value;
  family.metric.push_back(metric);
  return family;
}

double boot_time_seconds() {
  std::ifstream stat("/proc/stat");
  std::string key;
  double value = 0;
  while (stat >> key) {
    if (key == "btime") {
      stat >> value;
      return value;
    }
    stat.ignore(4096, '\n');
  }
  return 0;
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  // /proc/self/stat: fields after the parenthesised command name; utime=14, stime=15, starttime=22,
  // vsize=23, rss=24 (1-based, as proc(5) counts them).
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(stat.substr(close + 2));
    std::vector<std::string> f;
    for (std::string v; fields >> v;) f.push_back(v);
    // f[0] is field 3 (state).
    auto field = [&](int n) { return static_cast<size_t>(n - 3) < f.size() ? std::stod(f[static_cast<size_t>(n - 3)]) : 0.0; };
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    out.push_back(single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                         prometheus::MetricType::Counter, (field(14) + field(15)) / ticks));
    out.push_back(single("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                         prometheus::MetricType::Gauge, boot_time_seconds() + field(22) / ticks));
    out.push_back(single("process_virtual_memory_bytes", "Virtual memory size in bytes.", prometheus::MetricType::Gauge,
                         field(23)));
    out.push_back(single("process_resident_memory_bytes", "Resident memory size in bytes.",
                         prometheus::MetricType::Gauge, field(24) * page));
  }
  double fds = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (const dirent* e = readdir(dir))
      if (e->d_name[0] != '.') ++fds;
    closedir(dir);
    fds -= 1;  // the directory handle itself
  }
  out.push_back(single("process_open_fds", "Number of open file descriptors.", prometheus::MetricType::Gauge, fds));
  const long max_fds = sysconf(_SC_OPEN_MAX);
  out.push_back(single("process_max_fds", "Maximum number of open file descriptors.", prometheus::MetricType::Gauge,
                       static_cast<double>(max_fds)));
  return out;
}

}  // namespace gpu_extender
