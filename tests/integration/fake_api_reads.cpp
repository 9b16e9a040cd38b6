// The fake API server's reads: lists (paginated), watches (event streams), field selectors, GET of a pod.
#include <algorithm>
#include <chrono>
#include <thread>

#include "fake_api_server.h"

namespace test_support {

void FakeApiServer::install_read_routes() {
  server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res) || failing(res)) return;
    if (req.get_param_value("watch") == "1" || req.get_param_value("watch") == "true") watch("pods", req, res);
    else list("pods", req, res);
  });
  server_.Get("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res) || failing(res)) return;
    if (req.get_param_value("watch") == "1" || req.get_param_value("watch") == "true") watch("nodes", req, res);
    else list("nodes", req, res);
  });
  server_.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pods_.find(req.matches[1].str() + "/" + req.matches[2].str());
    if (it == pods_.end()) {
      res.status = 404;
      res.set_content(status(404, "NotFound", "pods \"" + req.matches[2].str() + "\" not found").dump(), "application/json");
      return;
    }
    res.set_content(it->second.dump(), "application/json");
  });
}

bool FakeApiServer::matches(const std::string& resource, const json& object, const httplib::Request& req) {
  if (resource != "pods") return true;
  // The pod field selectors the extender uses, as the API server reads them: comma-separated terms,
  // each field=value or field!=value, on spec.nodeName (pods on a node) or status.phase (not finished).
  const std::string selector = req.get_param_value("fieldSelector");
  size_t start = 0;
  while (start < selector.size()) {
    const size_t comma = std::min(selector.find(',', start), selector.size());
    const std::string term = selector.substr(start, comma - start);
    start = comma + 1;
    const size_t op = term.find('=');
    if (op == std::string::npos || op == 0) throw std::runtime_error("fake API server: bad field selector " + selector);
    const bool negated = term[op - 1] == '!';
    const std::string field = term.substr(0, negated ? op - 1 : op), value = term.substr(op + 1);
    std::string actual;
    if (field == "spec.nodeName") actual = object["spec"].value("nodeName", "");
    else if (field == "status.phase") actual = object.contains("status") ? object["status"].value("phase", "") : "";
    else throw std::runtime_error("fake API server: field selector on " + field + " is not supported");
    if ((actual == value) == negated) return false;
  }
  return true;
}

void FakeApiServer::list(const std::string& resource, const httplib::Request& req, httplib::Response& res) {
  std::chrono::milliseconds delay;
  json items = json::array();
  uint64_t rv;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++lists_[resource];
    delay = list_delay_;
    for (const auto& [key, object] : resource == "pods" ? pods_ : nodes_)
      if (matches(resource, object, req)) items.push_back(object);
    rv = rv_;
  }
  if (delay.count()) std::this_thread::sleep_for(delay);
  // Pagination: limit, and an opaque continue token (here: the offset).
  const size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : items.size();
  const size_t offset = req.has_param("continue") ? std::stoul(req.get_param_value("continue")) : 0;
  json page = json::array();
  for (size_t i = offset; i < items.size() && i < offset + limit; ++i) page.push_back(items[i]);
  json meta = {{"resourceVersion", std::to_string(rv)}};
  if (offset + limit < items.size()) meta["continue"] = std::to_string(offset + limit);
  const json list = {{"kind", resource == "pods" ? "PodList" : "NodeList"},
                     {"apiVersion", "v1"},
                     {"metadata", meta},
                     {"items", page}};
  res.set_content(list.dump(), "application/json");
}

void FakeApiServer::watch(const std::string& resource, const httplib::Request& req, httplib::Response& res) {
  const uint64_t from = std::stoull(req.get_param_value("resourceVersion").empty() ? "0" : req.get_param_value("resourceVersion"));
  const int timeout = req.has_param("timeoutSeconds") ? std::stoi(req.get_param_value("timeoutSeconds")) : 300;
  uint64_t drop_at, error_at, bookmark_at;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++watches_[resource];
    last_watch_query_[resource] = req.target;
    if (from < compacted_rv_) {
      res.status = 410;
      res.set_content(status(410, "Expired", "too old resource version: " + std::to_string(from)).dump(), "application/json");
      return;
    }
    drop_at = drop_generation_;
    error_at = error_generation_;
    bookmark_at = bookmark_generation_;
  }
  auto position = std::make_shared<uint64_t>(from);
  auto deadline = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now() +
                                                                          std::chrono::seconds(timeout));
  res.set_chunked_content_provider(
      "application/json",
      [this, resource, req_copy = req, position, deadline, drop_at, error_at, bookmark_at](size_t, httplib::DataSink& sink) mutable {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait_for(lock, std::chrono::milliseconds(50));
        if (stopping_ || drop_generation_ != drop_at) return false;  // abrupt end: no final chunk
        if (error_generation_ != error_at) {
          const std::string line = json({{"type", "ERROR"}, {"object", status(error_code_, "Expired", "too old resource version")}}).dump() + "\n";
          sink.write(line.data(), line.size());
          sink.done();
          return true;
        }
        std::string out;
        for (const Event& e : events_) {
          if (e.rv <= *position || e.resource != resource) continue;
          *position = e.rv;
          if (!matches(resource, e.object, req_copy)) continue;
          out += json({{"type", e.type}, {"object", e.object}}).dump() + "\n";
        }
        if (bookmark_generation_ != bookmark_at) {
          bookmark_at = bookmark_generation_;
          *position = std::max(*position, rv_);
          out += json({{"type", "BOOKMARK"},
                       {"object", {{"kind", resource == "pods" ? "Pod" : "Node"},
                                   {"metadata", {{"resourceVersion", std::to_string(*position)}}}}}}).dump() + "\n";
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;
        if (std::chrono::steady_clock::now() > *deadline) sink.done();
        return true;
      });
}

}  // namespace test_support
