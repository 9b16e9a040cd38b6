#include "scheduler_driver.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <cmath>
#include <unordered_set>

namespace test_support {

int64_t SchedulerDriver::counted_request(const json& pod, const std::string& resource) {
  return resource == "cpu" ? pod_request_milli(pod, resource) : pod_request_milli(pod, resource) / 1000;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kMaxNodeScore = 100, kMaxExtenderPriority = 10;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int64_t quantity(const std::string& resource, const json& value) {
  return resource == "cpu" ? quantity_milli(value) : quantity_milli(value) / 1000;
}

}  // namespace

json pending_pod(const std::string& name, int gpus, int aaa, const std::string& app) {
  json pod = make_pod("burst", name, "uid-" + name, "", gpus, aaa, "Pending");
  if (gpus) pod["metadata"]["annotations"] = {{"gpu.nvidia.com/model", "A100"}};
  if (!app.empty()) pod["metadata"]["labels"] = {{"app", app}};
  return pod;
}

// schedule_one.go numFeasibleNodesToFind (minFeasibleNodesToFind 100, minFeasibleNodesPercentageToFind 5).
size_t feasible_nodes_to_find(size_t all, int percentage_of_nodes_to_score) {
  if (all < 100) return all;
  int64_t percentage = percentage_of_nodes_to_score;
  if (percentage == 0) percentage = std::max<int64_t>(50 - static_cast<int64_t>(all) / 125, 5);
  const size_t found = all * static_cast<size_t>(percentage) / 100;
  return std::max<size_t>(found, 100);
}

SchedulerDriver::SchedulerDriver(FakeApiServer& api, int extender_port, DriverOptions options)
    : api_(api),
      options_(std::move(options)),
      rng_(options_.seed),
      connections_("127.0.0.1", extender_port, std::chrono::seconds(5)) {  // kube-scheduler's default httpTimeout
  load_cluster();
  std::lock_guard<std::mutex> lock(mutex_);
  for (int i = 0; i < 8; ++i) add_bind_worker();
}

void SchedulerDriver::add_bind_worker() {
  ++idle_bind_workers_;
  bind_workers_.emplace_back([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      bind_queue_changed_.wait(lock, [this] { return stopping_ || !bind_queue_.empty(); });
      if (bind_queue_.empty()) return;
      auto cycle = std::move(bind_queue_.front());
      bind_queue_.pop_front();
      --idle_bind_workers_;
      lock.unlock();
      cycle();
      lock.lock();
      ++idle_bind_workers_;
      --binds_in_flight_;
      bind_queue_changed_.notify_all();
    }
  });
}

SchedulerDriver::~SchedulerDriver() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  bind_queue_changed_.notify_all();
  for (auto& t : bind_workers_) t.join();
}

void SchedulerDriver::start_binding(std::function<void()> cycle) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bind_queue_.push_back(std::move(cycle));
    ++binds_in_flight_;
    // Every binding cycle runs at once, as a goroutine does: a /bind that waits (a group member at its
    // group's gate) must not hold up the binds behind it.
    if (bind_queue_.size() > idle_bind_workers_) add_bind_worker();
  }
  bind_queue_changed_.notify_all();
}

void SchedulerDriver::wait_for_binds() {
  std::unique_lock<std::mutex> lock(mutex_);
  bind_queue_changed_.wait(lock, [this] { return binds_in_flight_ == 0; });
}

void SchedulerDriver::bind(const json& pod, const std::string& node, Placement& placement) {
  const json binding = {{"PodName", pod["metadata"]["name"]},
                        {"PodNamespace", pod["metadata"]["namespace"]},
                        {"PodUID", pod["metadata"]["uid"]},
                        {"Node", node}};
  const auto start = Clock::now();
  std::string answer;
  const int status = connections_.take()->post("/bind", binding.dump(), answer);
  const double took = ms_since(start);
  std::string error;
  if (status != 200) error = status > 0 ? "bind: HTTP " + std::to_string(status) : "bind: no answer";
  else error = json::parse(answer).value("Error", "");
  std::lock_guard<std::mutex> lock(mutex_);
  timings_.bind_ms.push_back(took);
  if (!error.empty()) {
    placement.error = error;
    placement.node.clear();
    count(pod, nodes_[node], -1);  // ForgetPod
  }
}

void SchedulerDriver::count(const json& pod, NodeState& node, int sign) {
  for (const char* r : kCounted) node.requested[r] += sign * counted_request(pod, r);
  const NonZeroRequest nonzero = non_zero_request(pod);
  node.plugins.cpu_requested += sign * nonzero.cpu;
  node.plugins.memory_requested += sign * nonzero.memory;
  if (const std::string app = app_of(pod); !app.empty()) node.plugins.pods_by_app[app] += sign;
  const std::string uid = pod["metadata"].value("uid", "");
  if (sign > 0) node.pod_labels[uid] = pod["metadata"].value("labels", json::object());
  else node.pod_labels.erase(uid);
}

void SchedulerDriver::load_cluster() {
  for (const json& node : api_.nodes()) {
    const std::string name = node["metadata"]["name"];
    NodeState& state = nodes_[name];
    node_order_.push_back(name);
    state.object = node;
    const json& allocatable = node["status"]["allocatable"];
    for (const char* r : kCounted) state.allocatable[r] = quantity(r, allocatable.value(r, json()));
    state.plugins.cpu_allocatable = quantity_milli(allocatable.value("cpu", json()));
    state.plugins.memory_allocatable = quantity_milli(allocatable.value("memory", json()));
  }
  for (const json& pod : api_.pods()) {
    const std::string node = pod["spec"].value("nodeName", "");
    const std::string phase = pod["status"].value("phase", "");
    if (node.empty() || phase == "Succeeded" || phase == "Failed" || !nodes_.count(node)) continue;
    count(pod, nodes_[node], +1);
  }
}

bool SchedulerDriver::interested(const json& pod) const {
  for (const auto& c : pod["spec"]["containers"]) {
    const json resources = c.value("resources", json::object());
    for (const char* kind : {"requests", "limits"}) {
      const json listed = resources.value(kind, json::object());  // kept: items() of a temporary dangles
      for (const auto& [name, value] : listed.items())
        if (std::find(options_.managed_resources.begin(), options_.managed_resources.end(), name) !=
            options_.managed_resources.end())
          return true;
    }
  }
  return options_.managed_resources.empty();
}

std::string SchedulerDriver::select_host(const std::vector<std::string>& nodes,
                                         const std::map<std::string, int64_t>& totals) {
  // schedule_one.go selectHost: the first node with the highest score, replaced by each later node of
  // the same score with probability 1/count.
  std::string selected;
  int64_t best = 0;
  int count = 0;
  for (const std::string& node : nodes) {
    const int64_t score = totals.at(node);
    if (selected.empty() || score > best) {
      selected = node;
      best = score;
      count = 1;
    } else if (score == best) {
      ++count;
      if (std::uniform_int_distribution<int>(0, count - 1)(rng_) == 0) selected = node;
    }
  }
  return selected;
}

void SchedulerDriver::assume(const json& pod, const std::string& node, int sign) {
  std::lock_guard<std::mutex> lock(mutex_);
  count(pod, nodes_[node], sign);
}

json SchedulerDriver::extender_args(const json& pod, const std::vector<std::string>& nodes) const {
  json args = {{"Pod", pod}};
  if (options_.node_cache_capable) {
    args["Nodes"] = nullptr;
    args["NodeNames"] = nodes;
  } else {
    json items = json::array();
    for (const auto& name : nodes) items.push_back(nodes_.at(name).object);
    args["Nodes"] = {{"metadata", json::object()}, {"items", items}};
    args["NodeNames"] = nullptr;
  }
  return args;
}

bool SchedulerDriver::extender_filter(const json& pod, std::vector<std::string>& feasible, Placement& placement,
                                      double& ms) {
  // The body is built before the clock starts: the round trip is what the extender adds; building
  // JSON is the scheduler's own work (Go's encoder, not this one).
  const std::string body = extender_args(pod, feasible).dump();
  std::string answer;
  const auto start = Clock::now();
  const int status = connections_.take()->post("/filter", body, answer);
  timings_.filter_ms.push_back(ms_since(start));
  ms += timings_.filter_ms.back();
  if (status != 200) {
    placement.error = status > 0 ? "filter: HTTP " + std::to_string(status) : "filter: no answer";
    return false;
  }
  const json filtered = json::parse(answer);
  if (!filtered.value("Error", "").empty()) {
    placement.error = "filter: " + filtered["Error"].get<std::string>();
    return false;
  }
  // extender.go Filter: full mode rebuilds the node list from Nodes.items; names mode from NodeNames,
  // each of which must be a node it was sent.
  std::vector<std::string> kept;
  if (options_.node_cache_capable && filtered["NodeNames"].is_array()) {
    const std::unordered_set<std::string> sent(feasible.begin(), feasible.end());  // fromNodeName
    for (const auto& n : filtered["NodeNames"]) {
      if (!sent.count(n.get<std::string>())) {
        placement.error = "filter: extender claims a filtered node \"" + n.get<std::string>() +
                          "\" which is not found in the input node list";
        return false;
      }
      kept.push_back(n);
    }
  } else if (!options_.node_cache_capable && filtered["Nodes"].is_object()) {
    for (const auto& n : filtered["Nodes"]["items"]) kept.push_back(n["metadata"]["name"]);
  }
  feasible = std::move(kept);
  if (feasible.empty()) {
    // As the scheduler's FitError shows the extender's reasons: here the first one it gave.
    placement.error = "0 nodes left after the extender's filter";
    for (const char* failed : {"FailedAndUnresolvableNodes", "FailedNodes"})
      if (filtered.contains(failed) && filtered[failed].is_object() && !filtered[failed].empty()) {
        placement.error += ": " + filtered[failed].begin().value().get<std::string>();
        break;
      }
  }
  return !feasible.empty();
}

std::map<std::string, int64_t> SchedulerDriver::scores(const json& pod, const std::vector<std::string>& feasible,
                                                       bool with_extender, double& ms) {
  std::map<std::string, int64_t> totals;
  if (options_.own_score) {
    for (const auto& name : feasible) totals[name] = options_.own_score(nodes_.at(name).object, pod);
  } else {
    std::vector<const PluginNode*> plugin_nodes;
    {
      std::lock_guard<std::mutex> lock(mutex_);  // bind workers move usage
      for (const auto& name : feasible) plugin_nodes.push_back(&nodes_.at(name).plugins);
      const std::vector<int64_t> plugin = default_plugin_scores(pod, plugin_nodes);
      for (size_t i = 0; i < feasible.size(); ++i) totals[feasible[i]] = plugin[i];
    }
  }
  int64_t low = INT64_MAX, high = INT64_MIN;
  for (const auto& [name, score] : totals) low = std::min(low, score), high = std::max(high, score);
  timings_.own_score_spread = std::max(timings_.own_score_spread, high - low);
  if (!with_extender) return totals;
  const std::string body = extender_args(pod, feasible).dump();
  std::string answer;
  const auto start = Clock::now();
  const int status = connections_.take()->post("/prioritize", body, answer);
  timings_.prioritize_ms.push_back(ms_since(start));
  ms += timings_.prioritize_ms.back();
  if (status != 200) return totals;  // a failed prioritize is ignored by the scheduler (its own scores stand)
  for (const auto& host : json::parse(answer)) {
    const std::string name = host["Host"];
    if (totals.count(name))
      totals[name] += host["Score"].get<int64_t>() * options_.weight * (kMaxNodeScore / kMaxExtenderPriority);
  }
  return totals;
}

void SchedulerDriver::default_bind(const json& pod, const std::string& node, Placement& placement) {
  const std::string refused = api_.bind_pod(pod["metadata"]["namespace"], pod["metadata"]["name"],
                                            pod["metadata"]["uid"], node);
  if (!refused.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    placement.error = "bind: " + refused;
    placement.node.clear();
    count(pod, nodes_[node], -1);
  }
}

void SchedulerDriver::schedule_one(const json& pod, Placement& placement) {
  placement.pod = pod["metadata"]["name"];
  std::vector<std::string> feasible;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    feasible = own_filter(pod);
  }
  if (feasible.empty()) {
    placement.error = "0 nodes fit (scheduler's own filters)";
    return;
  }
  const bool with_extender = interested(pod);
  double extender_ms = 0;
  if (with_extender && !extender_filter(pod, feasible, placement, extender_ms)) return;
  // schedulePod: one feasible node is used without scoring.
  const std::map<std::string, int64_t> totals =
      feasible.size() > 1 ? scores(pod, feasible, with_extender, extender_ms) : std::map<std::string, int64_t>{{feasible[0], 0}};
  if (with_extender) timings_.extender_ms.push_back(extender_ms);
  const std::string node = select_host(feasible, totals);
  assume(pod, node, +1);
  placement.node = node;
  if (!with_extender) {
    start_binding([this, &pod, node, &placement] { default_bind(pod, node, placement); });
  } else if (options_.sequential) {
    bind(pod, node, placement);
  } else {
    // The binding cycle runs apart: go on with the next pod at once.
    start_binding([this, &pod, node, &placement] { bind(pod, node, placement); });
  }
  if (options_.sequential) wait_for_binds();
}

std::vector<Placement> SchedulerDriver::schedule(const std::vector<json>& pods) {
  const auto run_start = Clock::now();
  std::vector<Placement> out(pods.size());
  std::vector<size_t> queue(pods.size());
  for (size_t i = 0; i < pods.size(); ++i) queue[i] = i;
  auto backoff = options_.initial_backoff;
  for (int attempt = 1; !queue.empty(); ++attempt) {
    for (const size_t i : queue) {
      const int attempts = out[i].attempts + 1;
      out[i] = Placement{};
      out[i].attempts = attempts;
      schedule_one(pods[i], out[i]);
    }
    wait_for_binds();
    std::vector<size_t> left;
    for (const size_t i : queue)
      if (out[i].node.empty()) left.push_back(i);
    queue = std::move(left);
    if (attempt >= options_.attempts || queue.empty()) break;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
  timings_.seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  return out;
}

}  // namespace test_support
