#include "gpu_extender/usage/gpu_utilization.h"
#include "common/thread_name.h"

#include <httplib.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "common/file_text.h"

namespace gpu_extender {

PrometheusVector parse_prometheus_vector(std::string_view body) {
  PrometheusVector out;
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root)) {
    out.error = "the answer is not JSON";
    return out;
  }
  std::string_view status;
  if (root["status"].get(status) || status != "success") {
    std::string_view error;
    out.error = root["error"].get(error) ? "status is not success" : "Prometheus: " + std::string(error);
    return out;
  }
  std::string_view type;
  simdjson::dom::array result;
  if (root["data"]["resultType"].get(type) || type != "vector" || root["data"]["result"].get(result)) {
    out.error = "the query's result is not an instant vector";
    return out;
  }
  for (simdjson::dom::element series : result) {
    // The node: dcgm-exporter's Hostname (hostname since 2026), else a node or instance label.
    std::string_view node;
    for (const char* label : {"Hostname", "hostname", "node", "instance"})
      if (!series["metric"][label].get(node) && !node.empty()) break;
    simdjson::dom::array value;
    std::string_view text;
    if (node.empty() || series["value"].get(value) || value.size() != 2 || value.at(1).get(text)) continue;
    double percent = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), percent);
    if (ec != std::errc() || end != text.data() + text.size() || percent != percent) continue;  // NaN, +Inf text
    out.by_node[std::string(node)] = std::clamp(percent / 100.0, 0.0, 1.0);
  }
  return out;
}

GpuUtilizationSource::GpuUtilizationSource(Options options, std::function<std::string()> query)
    : options_(std::move(options)), query_(std::move(query)) {
  snapshot_.store(std::make_shared<const Snapshot>());
}

GpuUtilizationSource::~GpuUtilizationSource() { stop(); }

void GpuUtilizationSource::start() {
  poller_ = std::thread([this] {
    name_this_thread("dcgm-poll");
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      refresh();
      lock.lock();
      wake_.wait_for(lock, options_.period, [this] { return stopping_; });
    }
  });
}

void GpuUtilizationSource::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (poller_.joinable()) poller_.join();
}

Result<std::string> GpuUtilizationSource::fetch(const std::string& query) const {
  // url: scheme://host[:port][/prefix]; cpp-httplib's Client takes the first part, the prefix goes
  // before /api/v1/query (Prometheus behind a path, as with --web.route-prefix).
  const size_t scheme_end = options_.url.find("://");
  const size_t path_start = options_.url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  const std::string origin = options_.url.substr(0, path_start);
  std::string prefix = path_start == std::string::npos ? "" : options_.url.substr(path_start);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  httplib::Client client(origin);
  if (!client.is_valid()) return Status::failed("--prometheus-url " + options_.url + " is not an http(s) URL");
  const auto timeout = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  if (!options_.ca_file.empty()) client.set_ca_cert_path(options_.ca_file.c_str());
  if (!options_.token_file.empty()) {
    std::optional<std::string> token = read_file_text(options_.token_file);
    if (!token) return Status::failed("cannot read --prometheus-token-file " + options_.token_file);
    while (!token->empty() && (token->back() == '\n' || token->back() == '\r')) token->pop_back();
    client.set_bearer_token_auth(*token);
  }
  auto res = client.Get(prefix + "/api/v1/query", httplib::Params{{"query", query}}, httplib::Headers{});
  if (!res) return Status::failed("no answer from " + options_.url + " (" + httplib::to_string(res.error()) + ")");
  if (res->status != 200 && res->status != 400 && res->status != 422)
    return Status::failed("HTTP " + std::to_string(res->status) + " from " + options_.url);
  return std::move(res->body);  // 400 and 422 carry Prometheus' own error, which the parser reports
}

bool GpuUtilizationSource::refresh() {
  const std::string query = query_();
  const Result<std::string> body = fetch(query);
  std::string error = body.why();
  PrometheusVector vector;
  if (body.ok()) {
    vector = parse_prometheus_vector(*body);
    error = vector.error;
  }
  if (!error.empty()) {
    ++errors_;
    if (!failing_) spdlog::warn("GPU utilisation from Prometheus failed: {}; values go stale after {} ms", error,
                                options_.stale_after.count());
    failing_ = true;
    return false;
  }
  // Nodes missing from this answer keep their last value until it goes stale.
  const auto now = Clock::now();
  auto next = std::make_shared<Snapshot>(*snapshot_.load());
  for (const auto& [node, fraction] : vector.by_node) (*next)[node] = Sample{fraction, now};
  std::erase_if(*next, [&](const auto& entry) { return now - entry.second.seen > 10 * options_.stale_after; });
  snapshot_.store(std::move(next));
  nodes_ = vector.by_node.size();
  last_success_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  if (failing_ || vector.by_node.empty())
    spdlog::info("GPU utilisation from Prometheus: {} nodes", vector.by_node.size());
  failing_ = false;
  return true;
}

GpuUtilizationSource::Reading GpuUtilizationSource::reading(std::string_view node, Clock::time_point now) const {
  const std::shared_ptr<const Snapshot> snapshot = snapshot_.load();
  Reading r;
  auto it = snapshot->find(node);
  if (it == snapshot->end()) return r;
  r.last = it->second.fraction;
  r.seen = it->second.seen;
  if (now - it->second.seen <= options_.stale_after) r.fresh = it->second.fraction;
  return r;
}

GpuUtilizationSource::Stats GpuUtilizationSource::stats(Clock::time_point now) const {
  Stats s;
  const int64_t last = last_success_ns_;
  if (last != 0) {
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    s.seconds_since_success = static_cast<double>(now_ns - last) / 1e9;
  }
  s.errors = errors_;
  s.nodes = nodes_;
  return s;
}

std::string GpuUtilizationSource::describe() const { return "Prometheus at " + options_.url; }

}  // namespace gpu_extender
