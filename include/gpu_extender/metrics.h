#pragma once
// Prometheus metrics of the extender, in the text format, served at /metrics. All names start with
// gpu_extender_; counters end in _total; times in seconds, sizes in bytes. Label values are bounded:
// verbs, status codes, rule names, results; never a pod or a node name.
//
// Thread-safe: request threads record concurrently; render() may run at any time (a scrape).
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/cluster_view.h"
#include "gpu_extender/extender_service.h"
#include "gpu_extender/kube_connection.h"

namespace prometheus {
class Registry;
}

namespace gpu_extender {

class Metrics {
 public:
  Metrics();
  ~Metrics();

  // One request of `verb` ("filter", ...), its status, duration, body size, and what the verb did.
  void observe(std::string_view verb, int status, double seconds, size_t body_bytes, const VerbSummary& summary);
  void count_reload(bool ok);
  // Cluster-view gauges and watch counters, read at each scrape.
  void attach_cluster(std::shared_ptr<const ClusterView> view, std::function<std::vector<WatchCounts>()> watches);

  std::string render() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpu_extender
