// The fake API server's writes: bindings, pod merge patches, and Leases.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>

#include "fake_api_server.h"

namespace test_support {

void FakeApiServer::install_write_routes() {
  server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
               [this](const httplib::Request& req, httplib::Response& res) {
                 if (!authorised(req, res)) return;
                 bind(req, res, req.matches[1].str(), req.matches[2].str());
               });
  server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction)",
               [this](const httplib::Request& req, httplib::Response& res) {
                 if (!authorised(req, res)) return;
                 evict(req, res, req.matches[1].str(), req.matches[2].str());
               });
  server_.Post(R"(/api/v1/namespaces/([^/]+)/events)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    const json event = json::parse(req.body, nullptr, false);
    if (event.is_discarded() || event.value("kind", "") != "Event") return (void)bad_request(res, "not an Event");
    std::lock_guard<std::mutex> lock(mutex_);
    posted_events_.push_back(event);
    res.status = 201;
    res.set_content(event.dump(), "application/json");
  });
  server_.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    patch_pod(req, res, req.matches[1].str(), req.matches[2].str());
  });
}

namespace {

// A metav1.MicroTime as kube-apiserver decodes one (RFC3339 with exactly six fractional digits).
bool is_micro_time(const json& value) {
  if (!value.is_string()) return false;
  const std::string t = value.get<std::string>();
  static const std::string shape = "dddd-dd-ddTdd:dd:dd.dddddd";
  if (t.size() < shape.size() + 1) return false;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(t[i])) : t[i] != shape[i]) return false;
  const std::string zone = t.substr(shape.size());
  return zone == "Z" || (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':');
}

// Why the Lease cannot be decoded, or "": its spec's times must be MicroTimes.
std::string lease_decode_error(const json& lease) {
  if (!lease.is_object() || !lease.contains("metadata")) return "the object provided is unrecognized";
  const json spec = lease.value("spec", json::object());
  for (const char* field : {"acquireTime", "renewTime"})
    if (spec.contains(field) && !spec[field].is_null() && !is_micro_time(spec[field]))
      return std::string("Lease in version \"v1\" cannot be handled as a Lease: parsing time ") + spec[field].dump() +
             " as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse";
  return "";
}

}  // namespace

// Leases (coordination.k8s.io/v1): create, read, and updates conditional on resourceVersion. The Lease
// strategy allows create on update (a PUT of a missing Lease creates it) and no unconditional update
// (a PUT without resourceVersion is 422 Invalid).
void FakeApiServer::install_lease_routes() {
  const std::string leases = R"(/apis/coordination.k8s.io/v1/namespaces/([^/]+)/leases)";
  server_.Get(leases + "/([^/]+)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = leases_.find(req.matches[1].str() + "/" + req.matches[2].str());
    if (it == leases_.end()) {
      respond(res, 404, "NotFound", "leases.coordination.k8s.io \"" + req.matches[2].str() + "\" not found");
      return;
    }
    res.set_content(it->second.dump(), "application/json");
  });
  server_.Post(leases, [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    const json lease = json::parse(req.body, nullptr, false);
    if (const std::string error = lease_decode_error(lease); !error.empty()) return (void)bad_request(res, error);
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string key = req.matches[1].str() + "/" + lease["metadata"].value("name", "");
    if (leases_.count(key)) {
      respond(res, 409, "AlreadyExists", "leases.coordination.k8s.io already exists");
      return;
    }
    store_lease(key, lease, res, 201);
  });
  server_.Put(leases + "/([^/]+)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    const json lease = json::parse(req.body, nullptr, false);
    if (const std::string error = lease_decode_error(lease); !error.empty()) return (void)bad_request(res, error);
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string key = req.matches[1].str() + "/" + req.matches[2].str();
    auto it = leases_.find(key);
    if (it == leases_.end()) return store_lease(key, lease, res, 201);  // AllowCreateOnUpdate
    const std::string version = lease["metadata"].value("resourceVersion", "");
    if (version.empty()) {
      respond(res, 422, "Invalid", "Lease.coordination.k8s.io \"" + req.matches[2].str() +
                                 "\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update");
      return;
    }
    if (version != it->second["metadata"]["resourceVersion"].get<std::string>()) {
      respond(res, 409, "Conflict",
              "Operation cannot be fulfilled on leases.coordination.k8s.io \"" + req.matches[2].str() +
                  "\": the object has been modified; please apply your changes to the latest version and try again");
      return;
    }
    store_lease(key, lease, res, 200);
  });
}

void FakeApiServer::store_lease(const std::string& key, json lease, httplib::Response& res, int code) {
  lease["metadata"]["resourceVersion"] = std::to_string(++rv_);
  leases_[key] = lease;
  ++lease_writes_;
  res.status = code;
  res.set_content(lease.dump(), "application/json");
}

// pkg/registry/core/pod/storage/eviction.go: EvictionREST.Create, without the budgets' arithmetic.
void FakeApiServer::evict(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                          const std::string& name) {
  const json eviction = json::parse(req.body, nullptr, false);
  if (eviction.is_discarded() || eviction.value("kind", "") != "Eviction")
    return (void)bad_request(res, "the object provided is unrecognized");
  if (eviction["metadata"].value("name", "") != name)
    return (void)bad_request(res, "name in URL does not match name in Eviction object");
  const std::string key = ns + "/" + name;
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return respond(res, 404, "NotFound", "pods \"" + name + "\" not found");
  const std::string uid = eviction.value("/deleteOptions/preconditions/uid"_json_pointer, "");
  if (!uid.empty() && uid != it->second["metadata"]["uid"])
    return respond(res, 409, "Conflict", "Precondition failed: UID in precondition does not match");
  if (eviction_protected_.count(key)) {  // createTooManyRequestsError: the budget named in a cause
    json refusal = status(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.");
    refusal["details"] = {{"causes", {{{"reason", "DisruptionBudget"},
                                       {"message", "The disruption budget guarded needs 1 healthy pods and has 1 currently"}}}}};
    res.status = 429;
    res.set_content(refusal.dump(), "application/json");
    return;
  }
  res.status = 201;
  res.set_content(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})", "application/json");
  if (req.get_param_value("dryRun") == "All") return;
  evictions_.push_back(key);
  lock.unlock();
  delete_pod(ns, name);
}

void FakeApiServer::protect_from_eviction(const std::string& ns_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  eviction_protected_.insert(ns_name);
}

std::vector<std::string> FakeApiServer::evictions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return evictions_;
}

std::vector<json> FakeApiServer::posted_events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return posted_events_;
}

void FakeApiServer::bind(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                         const std::string& name) {
  const json binding = json::parse(req.body);
  std::lock_guard<std::mutex> lock(mutex_);
  // pkg/registry/core/pod/storage: BindingREST.Create.
  if (binding["metadata"].value("name", "") != name)
    return (void)bad_request(res, "name in URL does not match name in Binding object");
  const auto [code, answer] = apply_binding(ns, name, binding["metadata"].value("uid", ""), binding["target"]["name"]);
  res.status = code;
  res.set_content(answer.dump(), "application/json");
}

std::string FakeApiServer::bind_pod(const std::string& ns, const std::string& name, const std::string& uid,
                                    const std::string& node) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto [code, answer] = apply_binding(ns, name, uid, node);
  return code == 201 ? "" : answer.value("message", "HTTP " + std::to_string(code));
}

// What a Binding does, with mutex_ held: the status code and the Status answered.
std::pair<int, json> FakeApiServer::apply_binding(const std::string& ns, const std::string& name, const std::string& uid,
                                                  const std::string& node) {
  if (fail_binds_ > 0) {
    --fail_binds_;
    return {fail_status_, status(fail_status_, "InternalError", "etcd is having a bad day")};
  }
  if (forbid_)
    return {403, status(403, "Forbidden",
                        "pods \"" + name + "\" is forbidden: User \"system:serviceaccount:x:y\" cannot create "
                        "resource \"pods/binding\"")};
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return {404, status(404, "NotFound", "pods \"" + name + "\" not found")};
  json& pod = it->second;
  if (!uid.empty() && uid != pod["metadata"]["uid"])
    return {409, status(409, "Conflict", "Precondition failed: UID in precondition does not match")};
  if (pod["spec"].contains("nodeName") && !pod["spec"]["nodeName"].get<std::string>().empty())
    return {409, status(409, "Conflict",
                        "Operation cannot be fulfilled on pods/binding \"" + name + "\": pod " + name +
                            " is already assigned to node \"" + pod["spec"]["nodeName"].get<std::string>() + "\"")};
  json prev = pod;
  pod["spec"]["nodeName"] = node;
  pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
  bindings_.push_back({ns, name, uid, node});
  if (!silent_) record("pods", "MODIFIED", pod, std::move(prev));
  return {201, {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Success"}, {"code", 201}}};
}

// A JSON merge patch (RFC 7386), as the real server applies one: 415 for another content type, 404
// for no such pod, 422 when it would change the pod's UID (immutable: a precondition on the very pod).
void FakeApiServer::patch_pod(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                              const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (req.get_header_value("Content-Type") != "application/merge-patch+json") {
    respond(res, 415, "UnsupportedMediaType", "the body of the request was in an unknown format");
    return;
  }
  if (fail_patches_ > 0) {
    --fail_patches_;
    res.status = fail_patch_status_;
    res.set_content(status(fail_patch_status_, "InternalError", "etcd is having a bad day").dump(), "application/json");
    return;
  }
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) {
    respond(res, 404, "NotFound", "pods \"" + name + "\" not found");
    return;
  }
  const json patch = json::parse(req.body);
  json& pod = it->second;
  if (patch.contains("metadata") && patch["metadata"].contains("uid") && patch["metadata"]["uid"] != pod["metadata"]["uid"]) {
    respond(res, 422, "Invalid", "Pod \"" + name + "\" is invalid: metadata.uid: Invalid value: field is immutable");
    return;
  }
  json prev = pod;
  pod.merge_patch(patch);
  pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
  ++patches_;
  record("pods", "MODIFIED", pod, std::move(prev));
  res.status = 200;
  res.set_content(pod.dump(), "application/json");
}

}  // namespace test_support
