#include "fake_api_server.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace test_support {

const TestCertificate& TestCertificate::get() {
  static const TestCertificate cert = [] {
    TestCertificate c;
    char tmpl[] = "/tmp/gpu-extender-cert-XXXXXX";
    c.dir = mkdtemp(tmpl);
    c.cert_file = c.dir + "/tls.crt";
    c.key_file = c.dir + "/tls.key";
    const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=fake-apiserver "
                            "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + c.key_file +
                            " -out " + c.cert_file + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("openssl could not make a test certificate");
    return c;
  }();
  return cert;
}

json make_node(const std::string& name, const std::string& model, int gpus, int aaa, int bbb,
               const std::string& memory) {
  json labels = {{"kubernetes.io/hostname", name}};
  json resources = {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}};
  if (!model.empty()) {
    labels["gpu.nvidia.com/model"] = model;
    labels["gpu.nvidia.com/memory"] = memory;
    labels["gpu.nvidia.com/count"] = std::to_string(gpus);
    resources["nvidia.com/gpu"] = std::to_string(gpus);
  }
  if (aaa) resources["custom.resource/aaa"] = std::to_string(aaa);
  if (bbb) resources["custom.resource/bbb"] = std::to_string(bbb);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"uid", "uid-node-" + name}, {"labels", labels}}},
          {"spec", json::object()},
          {"status", {{"capacity", resources}, {"allocatable", resources}}}};
}

json make_pod(const std::string& ns, const std::string& name, const std::string& uid, const std::string& node,
              int gpus, int aaa, const std::string& phase) {
  json limits = json::object();
  if (gpus) limits["nvidia.com/gpu"] = std::to_string(gpus);
  if (aaa) limits["custom.resource/aaa"] = std::to_string(aaa);
  json spec = {{"containers", {{{"name", "main"}, {"image", "busybox"}, {"resources", {{"limits", limits}}}}}},
               {"schedulerName", "gpu-scheduler"}};
  if (!node.empty()) spec["nodeName"] = node;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
          {"spec", spec},
          {"status", {{"phase", phase}}}};
}

json FakeApiServer::status(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
          {"message", message}, {"reason", reason}, {"code", code}};
}

FakeApiServer::FakeApiServer()
    : server_(TestCertificate::get().cert_file.c_str(), TestCertificate::get().key_file.c_str()) {
  // Watches and kept-alive connections each hold a thread, as goroutines do in the real one.
  server_.new_task_queue = [] { return new httplib::ThreadPool(64); };
  server_.set_tcp_nodelay(true);  // as Go's net package does on every TCP connection
  // Go's server keeps a connection for any number of requests; cpp-httplib closes it after 5.
  server_.set_keep_alive_max_count(1000000);
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
  server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
               [this](const httplib::Request& req, httplib::Response& res) {
                 if (!authorised(req, res)) return;
                 bind(req, res, req.matches[1].str(), req.matches[2].str());
               });
  server_.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorised(req, res)) return;
    patch_pod(req, res, req.matches[1].str(), req.matches[2].str());
  });
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
  port_ = server_.bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("fake API server cannot listen");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

std::vector<std::string> FakeApiServer::extender_args() {
  if (token_dir_.empty()) {
    char tmpl[] = "/tmp/gpu-extender-token-XXXXXX";
    token_dir_ = mkdtemp(tmpl);
    std::ofstream(token_dir_ + "/token") << "test-token\n";
  }
  return {"--kube-api-server", url(), "--kube-token-file", token_dir_ + "/token", "--kube-ca-file",
          TestCertificate::get().cert_file};
}

FakeApiServer::~FakeApiServer() {
  if (!token_dir_.empty()) std::system(("rm -rf " + token_dir_).c_str());
  stopping_ = true;
  changed_.notify_all();
  server_.stop();
  thread_.join();
}

bool FakeApiServer::authorised(const httplib::Request& req, httplib::Response& res) {
  const std::string header = req.get_header_value("Authorization");
  const std::string token = header.rfind("Bearer ", 0) == 0 ? header.substr(7) : "";
  std::lock_guard<std::mutex> lock(mutex_);
  seen_tokens_.push_back(token);
  if (tokens_.count(token)) return true;
  res.status = 401;
  res.set_content(status(401, "Unauthorized", "Unauthorized").dump(), "application/json");
  return false;
}

bool FakeApiServer::failing(httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fail_reads_) return false;
  res.status = fail_reads_;
  res.set_content(status(fail_reads_, "InternalError", "the API server is unwell").dump(), "application/json");
  return true;
}

void FakeApiServer::fail_reads(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  fail_reads_ = status;
}

void FakeApiServer::accept_tokens(std::set<std::string> tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_ = std::move(tokens);
}

void FakeApiServer::record(const std::string& resource, const std::string& type, json object) {
  events_.push_back({rv_, resource, type, std::move(object)});
  changed_.notify_all();
}

void FakeApiServer::put_node(json node) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string name = node["metadata"]["name"];
  node["metadata"]["resourceVersion"] = std::to_string(++rv_);
  const bool existed = nodes_.count(name) > 0;
  nodes_[name] = node;
  record("nodes", existed ? "MODIFIED" : "ADDED", node);
}

void FakeApiServer::delete_node(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  json node = it->second;
  nodes_.erase(it);
  node["metadata"]["resourceVersion"] = std::to_string(++rv_);
  record("nodes", "DELETED", node);
}

void FakeApiServer::put_pod(json pod) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key = pod["metadata"]["namespace"].get<std::string>() + "/" + pod["metadata"]["name"].get<std::string>();
  pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
  const bool existed = pods_.count(key) > 0;
  pods_[key] = pod;
  record("pods", existed ? "MODIFIED" : "ADDED", pod);
}

void FakeApiServer::delete_pod(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return;
  json pod = it->second;
  pods_.erase(it);
  pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
  record("pods", "DELETED", pod);
}

json FakeApiServer::pod(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pods_.find(ns + "/" + name);
  return it == pods_.end() ? json() : it->second;
}

std::vector<json> FakeApiServer::nodes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<json> out;
  for (const auto& [name, node] : nodes_) out.push_back(node);
  return out;
}

std::vector<json> FakeApiServer::pods() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<json> out;
  for (const auto& [key, pod] : pods_) out.push_back(pod);
  return out;
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

std::string FakeApiServer::write_kubeconfig() {
  extender_args();  // makes the token file's directory
  const std::string path = token_dir_ + "/kubeconfig";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
                      << "clusters:\n- name: fake\n  cluster:\n    server: " << url()
                      << "\n    certificate-authority: " << TestCertificate::get().cert_file << "\n"
                      << "users:\n- name: tester\n  user:\n    token: test-token\n"
                      << "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: tester\n";
  return path;
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

void FakeApiServer::fail_next_patches(int count, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  fail_patches_ = count;
  fail_patch_status_ = status;
}

json FakeApiServer::lease(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = leases_.find(ns + "/" + name);
  return it == leases_.end() ? json() : it->second;
}

int FakeApiServer::patches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return patches_;
}

void FakeApiServer::fail_next_binds(int count, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  fail_binds_ = count;
  fail_status_ = status;
}
void FakeApiServer::forbid_binds(bool forbid) {
  std::lock_guard<std::mutex> lock(mutex_);
  forbid_ = forbid;
}
void FakeApiServer::silent_binds(bool silent) {
  std::lock_guard<std::mutex> lock(mutex_);
  silent_ = silent;
}
void FakeApiServer::drop_watches() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++drop_generation_;
  changed_.notify_all();
}
void FakeApiServer::send_error_event(int code) {
  std::lock_guard<std::mutex> lock(mutex_);
  error_code_ = code;
  ++error_generation_;
  changed_.notify_all();
}
void FakeApiServer::compact() {
  std::lock_guard<std::mutex> lock(mutex_);
  compacted_rv_ = rv_ + 1;
  events_.clear();
}
void FakeApiServer::send_bookmarks() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++bookmark_generation_;
  changed_.notify_all();
}
void FakeApiServer::delay_lists(std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mutex_);
  list_delay_ = delay;
}
std::vector<FakeApiServer::Binding> FakeApiServer::bindings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bindings_;
}
int FakeApiServer::list_requests(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = lists_.find(resource);
  return it == lists_.end() ? 0 : it->second;
}
int FakeApiServer::watch_requests(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = watches_.find(resource);
  return it == watches_.end() ? 0 : it->second;
}
std::vector<std::string> FakeApiServer::seen_tokens() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seen_tokens_;
}
std::string FakeApiServer::last_watch_query(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = last_watch_query_.find(resource);
  return it == last_watch_query_.end() ? "" : it->second;
}

}  // namespace test_support
