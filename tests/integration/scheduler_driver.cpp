#include "scheduler_driver.h"

#include <chrono>
#include <stdexcept>

namespace test_support {
namespace {

using Clock = std::chrono::steady_clock;
const char* const kCounted[] = {"nvidia.com/gpu", "custom.resource/aaa"};
constexpr int64_t kMaxNodeScore = 100, kMaxExtenderPriority = 10;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Whole-number quantities only: what the tests' objects carry.
int64_t quantity(const json& value) { return value.is_string() ? std::stoll(value.get<std::string>()) : 0; }

int64_t pod_request(const json& pod, const std::string& resource) {
  int64_t sum = 0;
  for (const auto& c : pod["spec"]["containers"]) {
    const json& resources = c.value("resources", json::object());
    const json& requests = resources.value("requests", json::object());
    const json& limits = resources.value("limits", json::object());
    if (requests.contains(resource)) sum += quantity(requests[resource]);
    else if (limits.contains(resource)) sum += quantity(limits[resource]);
  }
  return sum;
}

}  // namespace

json pending_pod(const std::string& name, int gpus, int aaa) {
  json pod = make_pod("burst", name, "uid-" + name, "", gpus, aaa, "Pending");
  if (gpus) pod["metadata"]["annotations"] = {{"gpu.nvidia.com/model", "A100"}};
  return pod;
}

SchedulerDriver::SchedulerDriver(FakeApiServer& api, int extender_port, DriverOptions options)
    : api_(api),
      port_(extender_port),
      options_(std::move(options)),
      rng_(options_.seed),
      verbs_("127.0.0.1", extender_port, "/", ""),
      client_("127.0.0.1", extender_port) {
  verbs_.set_read_timeout(std::chrono::seconds(5));  // kube-scheduler's default httpTimeout
  client_.set_keep_alive(true);
  client_.set_read_timeout(std::chrono::seconds(5));  // kube-scheduler's default httpTimeout
  client_.set_tcp_nodelay(true);
  load_cluster();
  for (int i = 0; i < 8; ++i) {
    bind_workers_.emplace_back([this] {
      httplib::Client client("127.0.0.1", port_);
      client.set_keep_alive(true);
      client.set_read_timeout(std::chrono::seconds(5));
      client.set_tcp_nodelay(true);
      std::unique_lock<std::mutex> lock(mutex_);
      while (true) {
        bind_queue_changed_.wait(lock, [this] { return stopping_ || !bind_queue_.empty(); });
        if (bind_queue_.empty()) return;
        auto cycle = std::move(bind_queue_.front());
        bind_queue_.pop_front();
        lock.unlock();
        cycle(client);
        lock.lock();
        --binds_in_flight_;
        bind_queue_changed_.notify_all();
      }
    });
  }
}

SchedulerDriver::~SchedulerDriver() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  bind_queue_changed_.notify_all();
  for (auto& t : bind_workers_) t.join();
}

void SchedulerDriver::start_binding(std::function<void(httplib::Client&)> cycle) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bind_queue_.push_back(std::move(cycle));
    ++binds_in_flight_;
  }
  bind_queue_changed_.notify_all();
}

void SchedulerDriver::wait_for_binds() {
  std::unique_lock<std::mutex> lock(mutex_);
  bind_queue_changed_.wait(lock, [this] { return binds_in_flight_ == 0; });
}

void SchedulerDriver::bind(httplib::Client& client, const json& pod, const std::string& node, Placement& placement) {
  const json binding = {{"PodName", pod["metadata"]["name"]},
                        {"PodNamespace", pod["metadata"]["namespace"]},
                        {"PodUID", pod["metadata"]["uid"]},
                        {"Node", node}};
  const auto start = Clock::now();
  auto res = client.Post("/bind", binding.dump(), "application/json");
  const double took = ms_since(start);
  std::string error;
  if (!res || res->status != 200) error = res ? "bind: HTTP " + std::to_string(res->status) : "bind: no answer";
  else error = json::parse(res->body).value("Error", "");
  std::lock_guard<std::mutex> lock(mutex_);
  timings_.bind_ms.push_back(took);
  if (!error.empty()) {
    placement.error = error;
    placement.node.clear();
    for (const char* r : kCounted) nodes_[node].requested[r] -= pod_request(pod, r);  // ForgetPod
  }
}

void SchedulerDriver::load_cluster() {
  for (const json& node : api_.nodes()) {
    NodeState& state = nodes_[node["metadata"]["name"].get<std::string>()];
    state.object = node;
    for (const char* r : kCounted) state.allocatable[r] = quantity(node["status"]["allocatable"].value(r, json()));
  }
  for (const json& pod : api_.pods()) {
    const std::string node = pod["spec"].value("nodeName", "");
    const std::string phase = pod["status"].value("phase", "");
    if (node.empty() || phase == "Succeeded" || phase == "Failed" || !nodes_.count(node)) continue;
    for (const char* r : kCounted) nodes_[node].requested[r] += pod_request(pod, r);
  }
}

std::vector<std::string> SchedulerDriver::own_filter(const json& pod) const {
  std::vector<std::string> out;
  for (const auto& [name, state] : nodes_) {
    bool fits = true;
    for (const char* r : kCounted) {
      const int64_t want = pod_request(pod, r);
      if (want == 0) continue;
      const auto alloc = state.allocatable.find(r);
      const auto used = state.requested.find(r);
      const int64_t free = (alloc == state.allocatable.end() ? 0 : alloc->second) -
                           (used == state.requested.end() ? 0 : used->second);
      if (want > free) fits = false;
    }
    if (fits) out.push_back(name);
  }
  return out;
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
  for (const char* r : kCounted) nodes_[node].requested[r] += sign * pod_request(pod, r);
}

std::vector<Placement> SchedulerDriver::schedule(const std::vector<json>& pods) {
  const auto run_start = Clock::now();
  std::vector<Placement> out(pods.size());
  std::string answer;  // the extender's last answer
  for (size_t i = 0; i < pods.size(); ++i) {
    const json& pod = pods[i];
    Placement& placement = out[i];
    placement.pod = pod["metadata"]["name"];
    std::vector<std::string> feasible;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      feasible = own_filter(pod);
    }
    if (feasible.empty()) {
      placement.error = "0 nodes fit (scheduler's own filters)";
      continue;
    }
    json args = {{"Pod", pod}};
    if (options_.node_cache_capable) {
      args["Nodes"] = nullptr;
      args["NodeNames"] = feasible;
    } else {
      json items = json::array();
      for (const auto& name : feasible) items.push_back(nodes_.at(name).object);
      args["Nodes"] = {{"metadata", json::object()}, {"items", items}};
      args["NodeNames"] = nullptr;
    }
    // The body is built before the clock starts: the round trip is what the extender adds; building
    // JSON is the scheduler's own work (Go's encoder, not this one).
    const std::string filter_body = args.dump();
    const auto filter_start = Clock::now();
    const int filter_status = verbs_.post("/filter", filter_body, answer);
    timings_.filter_ms.push_back(ms_since(filter_start));
    double extender_ms = timings_.filter_ms.back();
    if (filter_status != 200) {
      placement.error = filter_status > 0 ? "filter: HTTP " + std::to_string(filter_status) : "filter: no answer";
      continue;
    }
    const json filtered = json::parse(answer);
    if (!filtered.value("Error", "").empty()) {
      placement.error = "filter: " + filtered["Error"].get<std::string>();
      continue;
    }
    // extender.go Filter: full mode rebuilds the node list from Nodes.items; names mode from NodeNames.
    feasible.clear();
    if (options_.node_cache_capable) {
      for (const auto& n : filtered["NodeNames"]) feasible.push_back(n);
    } else if (filtered["Nodes"].is_object()) {
      for (const auto& n : filtered["Nodes"]["items"]) feasible.push_back(n["metadata"]["name"]);
    }
    if (feasible.empty()) {
      placement.error = "0 nodes left after the extender's filter";
      continue;
    }
    std::map<std::string, int64_t> totals;
    for (const auto& name : feasible)
      totals[name] = options_.own_score ? options_.own_score(nodes_.at(name).object, pod) : 0;
    if (feasible.size() > 1) {  // schedulePod: one feasible node is used without scoring
      json scored = args;
      if (options_.node_cache_capable) {
        scored["NodeNames"] = feasible;
      } else {
        json items = json::array();
        for (const auto& name : feasible) items.push_back(nodes_.at(name).object);
        scored["Nodes"]["items"] = items;
      }
      const std::string prioritize_body = scored.dump();
      const auto prioritize_start = Clock::now();
      const int prioritize_status = verbs_.post("/prioritize", prioritize_body, answer);
      timings_.prioritize_ms.push_back(ms_since(prioritize_start));
      extender_ms += timings_.prioritize_ms.back();
      // A failed prioritize is ignored by the scheduler (its own scores stand).
      if (prioritize_status == 200) {
        for (const auto& host : json::parse(answer)) {
          const std::string name = host["Host"];
          if (totals.count(name))
            totals[name] += host["Score"].get<int64_t>() * options_.weight * (kMaxNodeScore / kMaxExtenderPriority);
        }
      }
    }
    timings_.extender_ms.push_back(extender_ms);
    const std::string node = select_host(feasible, totals);
    assume(pod, node, +1);
    placement.node = node;

    if (options_.sequential) {
      bind(client_, pod, node, placement);
    } else {
      // The binding cycle runs apart: go on with the next pod at once.
      start_binding([this, &pod, node, &placement](httplib::Client& client) { bind(client, pod, node, placement); });
    }
  }
  wait_for_binds();
  timings_.seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  return out;
}

}  // namespace test_support
