// The scheduler stand-in's own filters (scheduler_driver.h): NodeResourcesFit on the counted resources,
// TaintToleration, InterPodAntiAffinity's required hostname terms, and findNodesThatPassFilters' search.
#include <algorithm>
#include <cmath>

#include "scheduler_driver.h"

namespace test_support {

bool SchedulerDriver::fits(const std::map<std::string, int64_t>& wants, const NodeState& state) const {
  for (const auto& [r, want] : wants) {
    if (want == 0) continue;
    const auto alloc = state.allocatable.find(r);
    const auto used = state.requested.find(r);
    const int64_t free = (alloc == state.allocatable.end() ? 0 : alloc->second) -
                         (used == state.requested.end() ? 0 : used->second);
    if (want > free) return false;
  }
  return true;
}

// TaintToleration's filter (v1helper.TolerationsTolerateTaint): every NoSchedule and NoExecute taint
// needs a toleration of its key (any key when empty, with Exists), and of its value unless Exists, and
// of its effect unless the toleration names none.
bool SchedulerDriver::tolerates(const json& pod, const json& node) {
  const json taints = node["spec"].value("taints", json::array());
  const json tolerations = pod["spec"].value("tolerations", json::array());
  for (const json& taint : taints) {
    const std::string effect = taint.value("effect", "");
    if (effect != "NoSchedule" && effect != "NoExecute") continue;
    const bool tolerated = std::any_of(tolerations.begin(), tolerations.end(), [&](const json& t) {
      const std::string key = t.value("key", ""), op = t.value("operator", "Equal"), eff = t.value("effect", "");
      if (!eff.empty() && eff != effect) return false;
      if (key.empty()) return op == "Exists";
      return key == taint.value("key", "") && (op == "Exists" || t.value("value", "") == taint.value("value", ""));
    });
    if (!tolerated) return false;
  }
  return true;
}

// InterPodAntiAffinity's filter for the incoming pod's own required terms, as far as the tests write
// them: topologyKey kubernetes.io/hostname and a labelSelector of matchLabels.
bool SchedulerDriver::anti_affinity_allows(const json& pod, const NodeState& node) {
  const json terms = pod["spec"].value("affinity", json::object())
                         .value("podAntiAffinity", json::object())
                         .value("requiredDuringSchedulingIgnoredDuringExecution", json::array());
  for (const json& term : terms) {
    if (term.value("topologyKey", "") != "kubernetes.io/hostname") continue;
    const json wanted = term.value("labelSelector", json::object()).value("matchLabels", json::object());
    for (const auto& [uid, labels] : node.pod_labels) {
      bool matches = true;
      for (const auto& [key, value] : wanted.items()) matches = matches && labels.value(key, json()) == value;
      if (matches) return false;
    }
  }
  return true;
}

std::vector<std::string> SchedulerDriver::own_filter(const json& pod) {
  const size_t all = node_order_.size();
  const size_t wanted = feasible_nodes_to_find(all, options_.percentage_of_nodes_to_score);
  std::map<std::string, int64_t> wants;  // read once a cycle, as the scheduler's PreFilter does
  for (const char* r : kCounted) wants[r] = counted_request(pod, r);
  // findNodesThatPassFilters checks the nodes with Parallelizer().Until: 16 workers take chunks of
  // chunkSizeFor(n) nodes (sqrt(n), at most n/16 + 1) in order, and each feasible node is appended as
  // its check ends. So the list's order is the workers' interleaving, new every cycle (an extender
  // sees the same names in another order each time). Emulated: at each step a worker picked at
  // random (seeded) checks its next node.
  constexpr size_t kParallelism = 16;
  const size_t chunk = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::sqrt(static_cast<double>(all))),
                                                             all / kParallelism + 1));
  struct Worker {
    size_t next = 0, end = 0;  // positions (from next_start_node_) of its chunk still to check
  };
  std::vector<Worker> workers;
  size_t handed_out = 0;  // chunks go to workers in order
  auto take_chunk = [&](Worker& w) {
    w.next = handed_out;
    w.end = std::min(all, handed_out + chunk);
    handed_out = w.end;
  };
  for (size_t k = 0; k < kParallelism && handed_out < all; ++k) {
    workers.emplace_back();
    take_chunk(workers.back());
  }
  std::vector<std::string> out;
  size_t processed = 0;
  while (!workers.empty() && out.size() < wanted) {
    const size_t k = std::uniform_int_distribution<size_t>(0, workers.size() - 1)(rng_);
    Worker& w = workers[k];
    const std::string& name = node_order_[(next_start_node_ + w.next) % all];
    ++processed;
    const NodeState& state = nodes_.at(name);
    if (fits(wants, state) && tolerates(pod, state.object) && anti_affinity_allows(pod, state)) out.push_back(name);
    if (++w.next == w.end) {
      if (handed_out < all) take_chunk(w);
      else workers.erase(workers.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  if (all > 0) next_start_node_ = (next_start_node_ + processed) % all;
  return out;
}

}  // namespace test_support
