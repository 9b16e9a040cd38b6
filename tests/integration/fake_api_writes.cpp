// The fake API server's writes: bindings, pod merge patches, and Leases.
#include <algorithm>
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
  server_.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    patch_pod(req, res, req.matches[1].str(), req.matches[2].str());
  });
}

void FakeApiServer::install_lease_routes() {
  // Leases (coordination.k8s.io/v1): create, read, and updates conditional on resourceVersion.
  const std::string leases = R"(/apis/coordination.k8s.io/v1/namespaces/([^/]+)/leases)";
  server_.Get(leases + "/([^/]+)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = leases_.find(req.matches[1].str() + "/" + req.matches[2].str());
    if (it == leases_.end()) {
      res.status = 404;
      res.set_content(status(404, "NotFound", "leases.coordination.k8s.io \"" + req.matches[2].str() + "\" not found").dump(),
                      "application/json");
      return;
    }
    res.set_content(it->second.dump(), "application/json");
  });
  server_.Post(leases, [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    json lease = json::parse(req.body);
    const std::string key = req.matches[1].str() + "/" + lease["metadata"]["name"].get<std::string>();
    if (leases_.count(key)) {
      res.status = 409;
      res.set_content(status(409, "AlreadyExists", "leases.coordination.k8s.io already exists").dump(), "application/json");
      return;
    }
    lease["metadata"]["resourceVersion"] = std::to_string(++rv_);
    leases_[key] = lease;
    ++lease_writes_;
    res.status = 201;
    res.set_content(lease.dump(), "application/json");
  });
  server_.Put(leases + "/([^/]+)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = leases_.find(req.matches[1].str() + "/" + req.matches[2].str());
    if (it == leases_.end()) {
      res.status = 404;
      res.set_content(status(404, "NotFound", "lease not found").dump(), "application/json");
      return;
    }
    json lease = json::parse(req.body);
    if (lease["metadata"].value("resourceVersion", "") != it->second["metadata"]["resourceVersion"].get<std::string>()) {
      res.status = 409;
      res.set_content(status(409, "Conflict",
                             "Operation cannot be fulfilled on leases.coordination.k8s.io \"" + req.matches[2].str() +
                                 "\": the object has been modified; please apply your changes to the latest version and try again")
                          .dump(),
                      "application/json");
      return;
    }
    lease["metadata"]["resourceVersion"] = std::to_string(++rv_);
    it->second = lease;
    ++lease_writes_;
    res.set_content(lease.dump(), "application/json");
  });
}

void FakeApiServer::bind(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                         const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fail_binds_ > 0) {
    --fail_binds_;
    res.status = fail_status_;
    res.set_content(status(fail_status_, "InternalError", "etcd is having a bad day").dump(), "application/json");
    return;
  }
  if (forbid_) {
    res.status = 403;
    res.set_content(status(403, "Forbidden",
                           "pods \"" + name + "\" is forbidden: User \"system:serviceaccount:x:y\" cannot create "
                           "resource \"pods/binding\"").dump(), "application/json");
    return;
  }
  const json binding = json::parse(req.body);
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) {
    res.status = 404;
    res.set_content(status(404, "NotFound", "pods \"" + name + "\" not found").dump(), "application/json");
    return;
  }
  json& pod = it->second;
  const std::string node = binding["target"]["name"];
  if (binding["metadata"].contains("uid") && binding["metadata"]["uid"] != pod["metadata"]["uid"]) {
    res.status = 409;
    res.set_content(status(409, "Conflict", "Precondition failed: UID in precondition does not match").dump(), "application/json");
    return;
  }
  if (pod["spec"].contains("nodeName") && !pod["spec"]["nodeName"].get<std::string>().empty()) {
    res.status = 409;
    res.set_content(status(409, "Conflict", "Operation cannot be fulfilled on pods/binding \"" + name + "\": pod " +
                                                name + " is already assigned to node \"" +
                                                pod["spec"]["nodeName"].get<std::string>() + "\"").dump(),
                    "application/json");
    return;
  }
  pod["spec"]["nodeName"] = node;
  pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
  bindings_.push_back({ns, name, binding["metadata"].value("uid", ""), node});
  if (!silent_) record("pods", "MODIFIED", pod);
  res.status = 201;
  res.set_content(json({{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Success"}, {"code", 201}}).dump(), "application/json");
}

// A JSON merge patch (RFC 7386), as the real server applies one: 415 for another content type, 404
// for no such pod, 422 when it would change the pod's UID (immutable: a precondition on the very pod).
void FakeApiServer::patch_pod(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                              const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (req.get_header_value("Content-Type") != "application/merge-patch+json") {
    res.status = 415;
    res.set_content(status(415, "UnsupportedMediaType", "the body of the request was in an unknown format").dump(),
                    "application/json");
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
    res.status = 404;
    res.set_content(status(404, "NotFound", "pods \"" + name + "\" not found").dump(), "application/json");
    return;
  }
  const json patch = json::parse(req.body);
  json& pod = it->second;
  if (patch.contains("metadata") && patch["metadata"].contains("uid") && patch["metadata"]["uid"] != pod["metadata"]["uid"]) {
    res.status = 422;
    res.set_content(status(422, "Invalid", "Pod \"" + name + "\" is invalid: metadata.uid: Invalid value: field is immutable").dump(),
                    "application/json");
    return;
  }
  pod.merge_patch(patch);
  pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
  ++patches_;
  record("pods", "MODIFIED", pod);
  res.status = 200;
  res.set_content(pod.dump(), "application/json");
}

}  // namespace test_support
