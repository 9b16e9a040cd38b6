#pragma once
// The scores of kube-scheduler v1.26's default score plugins that tell nodes apart in the tests'
// clusters, for the scheduler driver (pkg/scheduler/framework/plugins):
//   NodeResourcesFit, LeastAllocated on cpu and memory (weight 1): the emptier node scores higher;
//   NodeResourcesBalancedAllocation (weight 1): cpu and memory used in the same proportion;
//   PodTopologySpread with the system default constraint on kubernetes.io/hostname (maxSkew 3,
//     ScheduleAnyway; weight 2): fewer pods of the same set (here: the same "app" label) scores higher.
// Pods without cpu or memory requests count as the scheduler's non-zero defaults (100m, 200Mi). The
// other default plugins (ImageLocality, NodeAffinity, InterPodAffinity, TaintToleration) score every
// node of these clusters alike and are left out.
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace test_support {

using nlohmann::json;

// A Kubernetes quantity in milli-units, for the whole numbers and suffixes the tests' objects carry
// (m, k, M, G, T, Ki, Mi, Gi, Ti); 0 for anything else.
inline int64_t quantity_milli(const json& value) {
  if (!value.is_string()) return 0;
  const std::string text = value.get<std::string>();
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return 0;
  const int64_t number = std::stoll(text.substr(0, digits));
  static const std::map<std::string, int64_t> scale = {
      {"", 1000}, {"m", 1}, {"k", 1000000}, {"M", 1000000000}, {"G", 1000000000000},
      {"T", 1000000000000000}, {"Ki", 1024000}, {"Mi", 1048576000}, {"Gi", 1073741824000}, {"Ti", 1099511627776000}};
  auto it = scale.find(text.substr(digits));
  return it == scale.end() ? 0 : number * it->second;
}

// The pod's request of `resource` in milli-units (requests, else limits, summed over containers).
inline int64_t pod_request_milli(const json& pod, const std::string& resource) {
  int64_t sum = 0;
  for (const auto& c : pod["spec"]["containers"]) {
    const json resources = c.value("resources", json::object());
    const json requests = resources.value("requests", json::object());
    const json limits = resources.value("limits", json::object());
    if (requests.contains(resource)) sum += quantity_milli(requests[resource]);
    else if (limits.contains(resource)) sum += quantity_milli(limits[resource]);
  }
  return sum;
}

// What a node holds for the default plugins: allocatable and requested cpu and memory (milli-units),
// and its pods by "app" label.
struct PluginNode {
  int64_t cpu_allocatable = 0, memory_allocatable = 0;
  int64_t cpu_requested = 0, memory_requested = 0;
  std::map<std::string, int> pods_by_app;
};

struct NonZeroRequest {
  int64_t cpu, memory;
};
// schedutil.GetNonzeroRequests: 100m of cpu and 200Mi of memory for a container that asks for none.
inline NonZeroRequest non_zero_request(const json& pod) {
  const int64_t cpu = pod_request_milli(pod, "cpu"), memory = pod_request_milli(pod, "memory");
  return {cpu > 0 ? cpu : 100, memory > 0 ? memory : int64_t{200} * 1048576000};
}

inline std::string app_of(const json& pod) {
  return pod["metadata"].contains("labels") ? pod["metadata"]["labels"].value("app", "") : "";
}

// The default plugins' weighted sum for each node of `nodes` (in order), as the framework adds them.
inline std::vector<int64_t> default_plugin_scores(const json& pod, const std::vector<const PluginNode*>& nodes) {
  const NonZeroRequest want = non_zero_request(pod);
  std::vector<int64_t> total(nodes.size(), 0);
  std::vector<int64_t> spread_raw(nodes.size(), 0);
  const std::string app = app_of(pod);
  // PodTopologySpread's weight of the hostname domain: log(number of domains + 2).
  const double domain_weight = std::log(static_cast<double>(nodes.size()) + 2);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const PluginNode& n = *nodes[i];
    const int64_t cpu = n.cpu_requested + want.cpu, memory = n.memory_requested + want.memory;
    auto least = [](int64_t requested, int64_t allocatable) {
      return allocatable == 0 || requested > allocatable ? 0 : (allocatable - requested) * 100 / allocatable;
    };
    total[i] += (least(cpu, n.cpu_allocatable) + least(memory, n.memory_allocatable)) / 2;  // weight 1
    auto fraction = [](int64_t requested, int64_t allocatable) {
      return allocatable == 0 ? 1.0 : std::min(1.0, static_cast<double>(requested) / static_cast<double>(allocatable));
    };
    const double spread = std::abs(fraction(cpu, n.cpu_allocatable) - fraction(memory, n.memory_allocatable)) / 2;
    total[i] += static_cast<int64_t>((1 - spread) * 100);  // weight 1
    if (!app.empty()) {
      const auto it = n.pods_by_app.find(app);
      const int count = it == n.pods_by_app.end() ? 0 : it->second;
      spread_raw[i] = std::llround(count * domain_weight + (3 - 1));  // scoreForCount, maxSkew 3
    }
  }
  if (app.empty()) return total;  // no set to spread: PodTopologySpread skips the pod
  int64_t max = 0, min = INT64_MAX;
  for (int64_t s : spread_raw) max = std::max(max, s), min = std::min(min, s);
  for (size_t i = 0; i < nodes.size(); ++i)  // NormalizeScore, then weight 2
    total[i] += 2 * (max == 0 ? 100 : 100 * (max + min - spread_raw[i]) / max);
  return total;
}

}  // namespace test_support
