#include "server/observability/process_metrics.h"

#include <dirent.h>
#include <prometheus/metric_family.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "server/observability/metric_table.h"

namespace gpu_extender {
namespace {

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
    out.push_back(single(Metric::kProcessCpuSecondsTotal, (field(14) + field(15)) / ticks));
    out.push_back(single(Metric::kProcessStartTimeSeconds, boot_time_seconds() + field(22) / ticks));
    out.push_back(single(Metric::kProcessVirtualMemoryBytes, field(23)));
    out.push_back(single(Metric::kProcessResidentMemoryBytes, field(24) * page));
  }
  double fds = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (const dirent* e = readdir(dir))
      if (e->d_name[0] != '.') ++fds;
    closedir(dir);
    fds -= 1;  // the directory handle itself
  }
  out.push_back(single(Metric::kProcessOpenFds, fds));
  const long max_fds = sysconf(_SC_OPEN_MAX);
  out.push_back(single(Metric::kProcessMaxFds, static_cast<double>(max_fds)));
  return out;
}

}  // namespace gpu_extender
