// The fake API server's reads, as kube-apiserver (staging/src/k8s.io/apiserver) serves them: lists
// paginated at one resourceVersion, watches that filter events the way the watch cache does, field
// selectors with the fields each kind supports, and GET of a pod.
#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "fake_api_server.h"

namespace test_support {
namespace {

// The field selectors kube-apiserver accepts, by kind (pkg/registry/core/pod/strategy.go
// ToSelectableFields, pkg/registry/core/node/strategy.go NodeToSelectableFields), and each field's
// value in an object ("" when absent); nullopt for a field the kind does not support.
std::optional<std::string> field_of(const std::string& resource, const json& object, const std::string& field) {
  auto at = [&](const char* part, const char* key) {
    return object.contains(part) && object[part].is_object() ? object[part].value(key, std::string()) : std::string();
  };
  if (field == "metadata.name") return at("metadata", "name");
  if (resource == "pods") {
    if (field == "metadata.namespace") return at("metadata", "namespace");
    if (field == "spec.nodeName") return at("spec", "nodeName");
    if (field == "spec.schedulerName") return at("spec", "schedulerName");
    if (field == "spec.serviceAccountName") return at("spec", "serviceAccountName");
    if (field == "spec.restartPolicy") return at("spec", "restartPolicy");
    if (field == "status.phase") return at("status", "phase");
    if (field == "status.podIP") return at("status", "podIP");
    if (field == "status.nominatedNodeName") return at("status", "nominatedNodeName");
  } else if (field == "spec.unschedulable") {
    return std::string(object.contains("spec") && object["spec"].value("unschedulable", false) ? "true" : "false");
  }
  return std::nullopt;
}

// Parses `selector` for `resource`; an empty optional with `error` set when the real server answers 400.
std::optional<std::vector<FieldTerm>> parse_selector(const std::string& resource, const std::string& selector,
                                                std::string& error) {
  std::vector<FieldTerm> terms;
  size_t start = 0;
  while (start < selector.size()) {
    const size_t comma = std::min(selector.find(',', start), selector.size());
    const std::string term = selector.substr(start, comma - start);
    start = comma + 1;
    const size_t op = term.find('=');
    if (op == std::string::npos || op == 0) {
      error = "invalid selector: '" + selector + "'; can't understand '" + term + "'";
      return std::nullopt;
    }
    FieldTerm t;
    t.negated = term[op - 1] == '!';
    t.field = term.substr(0, t.negated ? op - 1 : op);
    t.value = term.substr(op + (term.compare(op, 2, "==") == 0 ? 2 : 1));
    if (!field_of(resource, json::object(), t.field)) {
      error = "field label not supported: " + t.field;
      return std::nullopt;
    }
    terms.push_back(std::move(t));
  }
  return terms;
}

bool selected(const std::string& resource, const json& object, const std::vector<FieldTerm>& terms) {
  for (const FieldTerm& t : terms)
    if ((*field_of(resource, object, t.field) == t.value) == t.negated) return false;
  return true;
}

// What a watcher with `terms` is told of `e`, as the watch cache's cacheWatcher.convertToWatchEvent
// decides: ADDED when the object starts to match, DELETED (the old object at the event's version) when
// it stops, MODIFIED while it matches; nothing when it never did. Null: nothing.
json watch_event_for(const std::string& resource, const FakeApiServer::Event& e, const std::vector<FieldTerm>& terms) {
  const bool now = e.type != "DELETED" && selected(resource, e.object, terms);
  const bool before = !e.prev.is_null() && selected(resource, e.prev, terms);
  if (now && !before) return {{"type", "ADDED"}, {"object", e.object}};
  if (now && before) return {{"type", "MODIFIED"}, {"object", e.object}};
  if (!now && before) {
    json old = e.prev;
    old["metadata"]["resourceVersion"] = std::to_string(e.rv);
    return {{"type", "DELETED"}, {"object", old}};
  }
  return nullptr;
}

// A bookmark as kube-apiserver writes one: an empty object of the kind, with only its resourceVersion
// (Go's encoding of a zero Pod or Node, creationTimestamp null included).
json bookmark(const std::string& resource, uint64_t rv) {
  json metadata = {{"resourceVersion", std::to_string(rv)}, {"creationTimestamp", nullptr}};
  if (resource.rfind("resource", 0) == 0 || resource == "devicetaintrules")  // the DRA kinds
    return {{"kind", FakeApiServer::kind_of(resource)}, {"apiVersion", "resource.k8s.io/v1"}, {"metadata", metadata},
            {"spec", json::object()}};
  if (resource == "pods")
    return {{"kind", "Pod"}, {"apiVersion", "v1"}, {"metadata", metadata}, {"spec", {{"containers", nullptr}}},
            {"status", json::object()}};
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata", metadata},
          {"spec", json::object()},
          {"status", {{"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 0}}}}}}}};
}

bool is_true(const std::string& value) { return value == "1" || value == "true"; }

}  // namespace

void FakeApiServer::install_read_routes() {
  for (const std::string resource : {"pods", "nodes"}) {
    server_.Get("/api/v1/" + resource, [this, resource](const httplib::Request& req, httplib::Response& res) {
      if (!authorised(req, res) || failing(res)) return;
      if (is_true(req.get_param_value("watch"))) watch(resource, req, res);
      else list(resource, req, res);
    });
  }
  // DRA (resource.k8s.io/v1): served only once a test puts a slice or a claim (before, 404: an API server
  // without DRA, before 1.34).
  for (const std::string resource : {"resourceslices", "resourceclaims", "resourceclaimtemplates", "devicetaintrules"}) {
    server_.Get("/apis/resource.k8s.io/v1/" + resource, [this, resource](const httplib::Request& req, httplib::Response& res) {
      if (!authorised(req, res) || failing(res)) return;
      if (!serves_dra_) {
        respond(res, 404, "NotFound", "the server could not find the requested resource");
        return;
      }
      if (is_true(req.get_param_value("watch"))) watch(resource, req, res);
      else list(resource, req, res);
    });
  }
  server_.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pods_.find(req.matches[1].str() + "/" + req.matches[2].str());
    if (it == pods_.end()) {
      respond(res, 404, "NotFound", "pods \"" + req.matches[2].str() + "\" not found");
      return;
    }
    res.set_content(it->second.dump(), "application/json");
  });
}

bool FakeApiServer::bad_request(httplib::Response& res, const std::string& message) {
  respond(res, 400, "BadRequest", message);
  return false;
}

void FakeApiServer::respond(httplib::Response& res, int code, const std::string& reason, const std::string& message) {
  res.status = code;
  res.set_content(status(code, reason, message).dump(), "application/json");
}

// Pages are read at the resourceVersion of the first: the continue token names a snapshot taken then
// (the real one encodes that version and the last key, and reads etcd at it). A token older than the
// compaction is 410 Expired, as the real one answers.
void FakeApiServer::list(const std::string& resource, const httplib::Request& req, httplib::Response& res) {
  std::string error;
  const auto terms = parse_selector(resource, req.get_param_value("fieldSelector"), error);
  if (!terms) return (void)bad_request(res, error);
  std::chrono::milliseconds delay;
  ListSnapshot snapshot;
  size_t offset = 0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    ++lists_[resource];
    changed_.wait(lock, [this] { return !hold_lists_ || stopping_; });  // hold_lists(): answered on release
    delay = list_delay_resource_.empty() || list_delay_resource_ == resource ? list_delay_ : std::chrono::milliseconds(0);
    if (req.has_param("continue")) {
      const std::string token = req.get_param_value("continue");
      auto it = snapshots_.find(token.substr(0, token.find('/')));
      if (it == snapshots_.end() || it->second.rv < compacted_rv_) {
        respond(res, 410, "Expired", "The provided continue parameter is too old to display a consistent list result. You "
                               "can start a new list without the continue parameter.");
        return;
      }
      snapshot = it->second;
      offset = std::stoul(token.substr(token.find('/') + 1));
    } else {
      snapshot.rv = rv_;
      for (const auto& [key, object] : objects_of(resource))
        if (selected(resource, object, *terms)) snapshot.items.push_back(object);
    }
  }
  if (delay.count()) std::this_thread::sleep_for(delay);
  const size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : snapshot.items.size();
  json page = json::array();
  for (size_t i = offset; i < snapshot.items.size() && i < offset + limit; ++i) page.push_back(snapshot.items[i]);
  json meta = {{"resourceVersion", std::to_string(snapshot.rv)}};
  if (offset + limit < snapshot.items.size()) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string id = std::to_string(++next_snapshot_);
    snapshots_[id] = snapshot;
    meta["continue"] = id + "/" + std::to_string(offset + limit);
  }
  const bool dra = resource.rfind("resource", 0) == 0;
  const json list = {{"kind", std::string(kind_of(resource)) + "List"},
                     {"apiVersion", dra ? "resource.k8s.io/v1" : "v1"},
                     {"metadata", meta},
                     {"items", page}};
  res.set_content(list.dump(), "application/json");
}

// A watch always answers 200 once the request is understood: a resourceVersion older than the
// compaction is one ERROR event carrying a 410 Expired Status, then the end of the stream (the watch
// cache's "errors must fail with a watch event of type ERROR, rather than a directly returned error").
void FakeApiServer::watch(const std::string& resource, const httplib::Request& req, httplib::Response& res) {
  std::string error;
  const auto parsed = parse_selector(resource, req.get_param_value("fieldSelector"), error);
  if (!parsed) return (void)bad_request(res, error);
  WatchState w;
  w.resource = resource;
  w.terms = *parsed;
  w.position = std::stoull(req.get_param_value("resourceVersion").empty() ? "0" : req.get_param_value("resourceVersion"));
  w.bookmarks = is_true(req.get_param_value("allowWatchBookmarks"));
  const int timeout = req.has_param("timeoutSeconds") ? std::stoi(req.get_param_value("timeoutSeconds")) : 300;
  w.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++watches_[resource];
    last_watch_query_[resource] = req.target;
    w.expired = w.position < compacted_rv_;
    w.drop_at = drop_generation_;
    w.error_at = error_generation_;
    w.bookmark_at = bookmark_generation_;
  }
  auto state = std::make_shared<WatchState>(std::move(w));
  res.set_chunked_content_provider("application/json", [this, state](size_t, httplib::DataSink& sink) {
    return stream_watch(*state, sink);
  });
}

bool FakeApiServer::stream_watch(WatchState& w, httplib::DataSink& sink) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto end_with_error = [&](int code, const std::string& message) {
    const std::string line = json({{"type", "ERROR"}, {"object", status(code, "Expired", message)}}).dump() + "\n";
    sink.write(line.data(), line.size());
    sink.done();
    return true;
  };
  if (w.expired)
    return end_with_error(410, "too old resource version: " + std::to_string(w.position) + " (" +
                                   std::to_string(compacted_rv_) + ")");
  changed_.wait_for(lock, std::chrono::milliseconds(50));
  if (stopping_ || drop_generation_ != w.drop_at) return false;  // abrupt end: no final chunk
  if (error_generation_ != w.error_at) return end_with_error(error_code_, "too old resource version");
  std::string out;
  for (const Event& e : events_) {
    if (e.rv <= w.position || e.resource != w.resource) continue;
    w.position = e.rv;
    const json event = watch_event_for(w.resource, e, w.terms);
    if (event.is_null()) continue;
    out += event.dump() + "\n";
    ++traffic_.watch_events;
  }
  if (bookmark_generation_ != w.bookmark_at) {
    w.bookmark_at = bookmark_generation_;
    w.position = std::max(w.position, rv_);
    if (w.bookmarks) {
      out += json({{"type", "BOOKMARK"}, {"object", bookmark(w.resource, w.position)}}).dump() + "\n";
      ++bookmarks_sent_;
    }
  }
  traffic_.bytes_out += out.size();
  const size_t split = split_watch_lines_ && out.size() > 1 ? out.size() / 2 : 0;
  lock.unlock();
  if (split > 0) {
    // Half a line now, the rest a moment later: the client must hold a partial line until it ends.
    if (!sink.write(out.data(), split)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!sink.write(out.data() + split, out.size() - split)) return false;
  } else if (!out.empty() && !sink.write(out.data(), out.size())) {
    return false;
  }
  if (std::chrono::steady_clock::now() > w.deadline) sink.done();
  return true;
}

}  // namespace test_support
