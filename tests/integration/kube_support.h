#pragma once
// The real binary against a fake API server over TLS with a bearer token, the bed of the kube tests
// (kube_view_test.cpp, kube_bind_test.cpp, kube_preempt_test.cpp): a small cluster of GPU nodes of two
// models and pods holding some of them, the flags that point the extender at it, its names-mode and
// full-mode bodies, and reading the extender's answers.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"

namespace kube_support {

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;
using test_support::make_node;
using test_support::make_pod;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpu-extender-kube-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  std::string file(const std::string& name, const std::string& content) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << content;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline json post_json(ExtenderProcess& p, const std::string& path, const json& body, int* status = nullptr) {
  httplib::Client client("127.0.0.1", p.port());
  client.set_read_timeout(std::chrono::seconds(20));
  auto res = client.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(res);
  if (status) *status = res->status;
  return json::parse(res->body);
}

inline json gpu_pod(const std::string& name, const std::string& uid, int gpus) {
  json pod = make_pod("ml", name, uid, "", gpus);
  pod["metadata"]["annotations"] = {{"gpu.nvidia.com/model", "A100"}};
  pod["status"]["phase"] = "Pending";
  return pod;
}

// A small cluster: GPU nodes of two models, one with bbb, and pods holding some of them.
struct Cluster {
  FakeApiServer api;
  TempDir dir;
  std::string token_file = dir.file("token", "test-token\n");
  std::vector<json> nodes = {make_node("a100-8", "A100", 8), make_node("a100-4", "A100", 4),
                             make_node("t4-4", "T4", 4, 0, 0, "16384"), make_node("bbb-node", "A100", 4, 0, 1)};
  Cluster() {
    for (const auto& n : nodes) api.put_node(n);
    api.put_pod(make_pod("ml", "busy", "uid-busy", "a100-8", 6));
    api.put_pod(make_pod("ml", "done", "uid-done", "a100-4", 4, 0, "Succeeded"));
    api.put_pod(make_pod("ml", "waiting", "uid-waiting", "", 8, 0, "Pending"));
  }
  std::vector<std::string> args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a{"--kube-api-server", api.url(), "--kube-token-file", token_file, "--kube-ca-file",
                               test_support::TestCertificate::get().cert_file};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  json names_args(const json& pod) const {
    json names = json::array();
    for (const auto& n : nodes) names.push_back(n["metadata"]["name"]);
    return {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
  }
  json full_args(const json& pod) const {
    return {{"Pod", pod}, {"Nodes", {{"metadata", json::object()}, {"items", nodes}}}, {"NodeNames", nullptr}};
  }
};

inline bool ready(ExtenderProcess& p) {
  httplib::Client client("127.0.0.1", p.port());
  auto res = client.Get("/readyz");
  return res && res->status == 200;
}

inline std::string failure_of(const json& filter_result, const std::string& node) {
  for (const char* key : {"FailedNodes", "FailedAndUnresolvableNodes"})
    if (filter_result[key].is_object() && filter_result[key].contains(node)) return filter_result[key][node];
  return "";
}

}  // namespace kube_support
