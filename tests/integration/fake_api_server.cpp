#include "fake_api_server.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace test_support {

const TestCertificate& TestCertificate::get() {
  static const TestCertificate cert = [] {
    TestCertificate c;
    char tmpl[] = "/tmp/gpu-extender-cert-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("no temporary directory for the test certificate");
    c.dir = tmpl;
    c.cert_file = c.dir + "/tls.crt";
    c.key_file = c.dir + "/tls.key";
    const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=fake-apiserver "
                            "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + c.key_file +
                            " -out " + c.cert_file + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("openssl could not make a test certificate");
    return c;
  }();
  // Removed when the test process exits: ctest runs every case as its own process, and each made a directory
  // that outlived it (thousands in /tmp after a few suite runs).
  static const struct Remover {
    ~Remover() {
      std::remove(cert.cert_file.c_str());
      std::remove(cert.key_file.c_str());
      rmdir(cert.dir.c_str());
    }
  } remover;
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
  server_.set_logger([this](const httplib::Request& req, const httplib::Response& res) { count(req, res); });
  install_read_routes();
  install_write_routes();
  install_lease_routes();
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

void FakeApiServer::record(const std::string& resource, const std::string& type, json object, json prev) {
  events_.push_back({rv_, resource, type, std::move(object), std::move(prev)});
  changed_.notify_all();
}

void FakeApiServer::put_node(json node) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string name = node["metadata"]["name"];
  node["metadata"]["resourceVersion"] = std::to_string(++rv_);
  auto it = nodes_.find(name);
  json prev = it == nodes_.end() ? json() : it->second;
  nodes_[name] = node;
  record("nodes", prev.is_null() ? "ADDED" : "MODIFIED", node, std::move(prev));
}

void FakeApiServer::delete_node(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  json node = it->second;
  nodes_.erase(it);
  node["metadata"]["resourceVersion"] = std::to_string(++rv_);
  record("nodes", "DELETED", node, node);
}

const char* FakeApiServer::kind_of(const std::string& resource) {
  if (resource == "pods") return "Pod";
  if (resource == "nodes") return "Node";
  if (resource == "resourceslices") return "ResourceSlice";
  if (resource == "resourceclaimtemplates") return "ResourceClaimTemplate";
  if (resource == "devicetaintrules") return "DeviceTaintRule";
  return "ResourceClaim";
}

std::map<std::string, json>& FakeApiServer::objects_of(const std::string& resource) {
  if (resource == "pods") return pods_;
  if (resource == "nodes") return nodes_;
  return dra_[resource];
}

namespace {
std::string key_of(const json& object) {  // "namespace/name", or "name" for objects of no namespace
  const json& meta = object["metadata"];
  const std::string name = meta["name"];
  return meta.contains("namespace") ? meta["namespace"].get<std::string>() + "/" + name : name;
}
}  // namespace

void FakeApiServer::put_dra(const std::string& resource, json object) {
  std::lock_guard<std::mutex> lock(mutex_);
  serves_dra_ = true;
  const std::string key = key_of(object);
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  auto& objects = dra_[resource];
  auto it = objects.find(key);
  json prev = it == objects.end() ? json() : it->second;
  objects[key] = object;
  record(resource, prev.is_null() ? "ADDED" : "MODIFIED", object, std::move(prev));
}

void FakeApiServer::delete_dra(const std::string& resource, const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& objects = dra_[resource];
  auto it = objects.find(key);
  if (it == objects.end()) return;
  json object = it->second;
  objects.erase(it);
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  record(resource, "DELETED", object, object);
}

void FakeApiServer::put_pod(json pod) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key = pod["metadata"]["namespace"].get<std::string>() + "/" + pod["metadata"]["name"].get<std::string>();
  pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
  auto it = pods_.find(key);
  json prev = it == pods_.end() ? json() : it->second;
  pods_[key] = pod;
  record("pods", prev.is_null() ? "ADDED" : "MODIFIED", pod, std::move(prev));
}

void FakeApiServer::delete_pod(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return;
  json pod = it->second;
  pods_.erase(it);
  pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
  record("pods", "DELETED", pod, pod);
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
// The kind a request is about: the path's last segment that is not a name (pods, nodes, binding,
// leases), with "?watch" for a watch.
void FakeApiServer::count(const httplib::Request& req, const httplib::Response& res) {
  std::string path = req.path;
  std::string kind;
  for (const char* k : {"binding", "eviction", "events", "leases", "pods", "nodes", "resourceslices", "resourceclaimtemplates", "resourceclaims",
                        "devicetaintrules"})
    if (path.find(std::string("/") + k) != std::string::npos) {
      kind = k;
      break;
    }
  const bool watch = req.get_param_value("watch") == "1" || req.get_param_value("watch") == "true";
  if (watch) kind += "?watch";
  std::lock_guard<std::mutex> lock(mutex_);
  ++traffic_.requests[req.method + " " + kind];
  ++traffic_.calls[req.method + " " + path + (watch ? " watch" : "")];
  if (client_ports_.insert(req.remote_port).second) ++traffic_.connections;
  traffic_.bytes_in += req.body.size();
  traffic_.bytes_out += res.body.size();
}
FakeApiServer::Traffic FakeApiServer::traffic() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return traffic_;
}
int FakeApiServer::bookmarks_sent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bookmarks_sent_;
}
uint64_t FakeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rv_;
}
void FakeApiServer::hold_lists(bool hold) {
  std::lock_guard<std::mutex> lock(mutex_);
  hold_lists_ = hold;
  changed_.notify_all();
}
void FakeApiServer::split_watch_lines(bool split) {
  std::lock_guard<std::mutex> lock(mutex_);
  split_watch_lines_ = split;
}
void FakeApiServer::delay_lists(std::chrono::milliseconds delay, const std::string& resource) {
  std::lock_guard<std::mutex> lock(mutex_);
  list_delay_ = delay;
  list_delay_resource_ = resource;
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
