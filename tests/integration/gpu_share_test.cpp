// GPU sharing by memory against the fake API server: /bind chooses the device, writes gpushare's
// annotations before the Binding, never overcommits a device under concurrent binds, and withdraws
// the annotations when the binding fails. A stand-in for gpushare's device plugin then reads them as
// its source does at Allocate, and each pod must get the device the extender chose.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <thread>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"

using nlohmann::json;
using test_support::eventually;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;

namespace {

// gpushare's device plugin reports 4 GPUs of 16 GiB as aliyun.com/gpu-mem 64 and gpu-count 4.
json share_node(const std::string& name) {
  json node = test_support::make_node(name, "", 0);
  for (const char* part : {"capacity", "allocatable"}) {
    node["status"][part]["aliyun.com/gpu-mem"] = "64";
    node["status"][part]["aliyun.com/gpu-count"] = "4";
  }
  return node;
}

json share_pod(const std::string& name, int gib, const std::string& placement = "") {
  json pod = test_support::make_pod("ml", name, "uid-" + name, "", 0, 0, "Pending");
  pod["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = std::to_string(gib);
  if (!placement.empty()) pod["metadata"]["annotations"] = {{"gpu.nvidia.com/placement", placement}};
  return pod;
}

json post_json(const ExtenderProcess& p, const std::string& path, const json& body) {
  httplib::Client client("127.0.0.1", p.port());
  client.set_read_timeout(std::chrono::seconds(20));
  auto res = client.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return json::parse(res->body);
}

std::string bind_pod(const ExtenderProcess& p, const std::string& name, const std::string& node) {
  return post_json(p, "/bind", {{"PodName", name}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + name}, {"Node", node}})["Error"];
}

std::string annotation(const json& pod, const std::string& key) {
  const json& a = pod["metadata"].value("annotations", json::object());
  return a.contains(key) ? a[key].get<std::string>() : "";
}

int64_t gpu_mem_of(const json& pod) {
  int64_t sum = 0;
  for (const auto& c : pod["spec"]["containers"]) {
    const json limits = c["resources"].value("limits", json::object());
    if (limits.contains("aliyun.com/gpu-mem")) sum += std::stoll(limits["aliyun.com/gpu-mem"].get<std::string>());
  }
  return sum;
}

// gpushare-device-plugin at Allocate, as its source describes it: of the Pending pods on this node
// that ask gpu-mem, are not yet assigned and carry an assume time, oldest first, the first whose
// gpu-mem equals the request; its device index is exposed, and it is marked assigned.
std::pair<std::string, std::string> device_plugin_allocate(FakeApiServer& api, const std::string& node, int64_t request) {
  std::vector<json> candidates;
  for (const json& pod : api.pods()) {
    if (pod["spec"].value("nodeName", "") != node || pod["status"].value("phase", "") != "Pending") continue;
    if (gpu_mem_of(pod) <= 0 || annotation(pod, "ALIYUN_COM_GPU_MEM_ASSIGNED") != "false") continue;
    if (annotation(pod, "ALIYUN_COM_GPU_MEM_ASSUME_TIME").empty()) continue;
    candidates.push_back(pod);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const json& a, const json& b) {
    return std::stoull(annotation(a, "ALIYUN_COM_GPU_MEM_ASSUME_TIME")) <
           std::stoull(annotation(b, "ALIYUN_COM_GPU_MEM_ASSUME_TIME"));
  });
  for (json pod : candidates) {
    if (gpu_mem_of(pod) != request) continue;
    pod["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_ASSIGNED"] = "true";
    api.put_pod(pod);
    return {pod["metadata"]["name"], annotation(pod, "ALIYUN_COM_GPU_MEM_IDX")};
  }
  return {"", ""};
}

struct ShareCluster {
  FakeApiServer api;
  ShareCluster() {
    api.put_node(share_node("share-a"));
    api.put_node(share_node("share-b"));
  }
};

bool ready(const ExtenderProcess& p) {
  httplib::Client client("127.0.0.1", p.port());
  auto res = client.Get("/readyz");
  return res && res->status == 200;
}

}  // namespace

TEST_CASE("share: the scheduler's cycle places shared pods on devices, and the device plugin finds each one's device") {
  ShareCluster c;
  ExtenderProcess p(c.api.extender_args());
  REQUIRE(eventually([&] { return ready(p); }));
  // As extender-config/examples/gpu-share: binpack fills share-a's GPU 0 (4 + 8 + 4), GPU 1 (12),
  // GPU 2 (12); the pod asking to spread goes to the empty node.
  const std::vector<std::tuple<std::string, int, std::string>> pods{
      {"infer-1", 4, ""}, {"infer-2", 8, ""}, {"train-1", 12, ""}, {"infer-3", 4, ""}, {"train-2", 12, ""},
      {"batch-1", 4, "spread"}};
  std::vector<std::pair<std::string, std::string>> placed;  // node, device, in bind order
  for (const auto& [name, gib, placement] : pods) {
    const json pod = share_pod(name, gib, placement);
    c.api.put_pod(pod);
    const json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"share-a", "share-b"}}};
    const json filtered = post_json(p, "/filter", args);
    REQUIRE(filtered["NodeNames"].size() == 2);
    const json scores = post_json(p, "/prioritize", args);
    // Full mode (node objects in the body) gives the same answers as names mode.
    const json full = {{"Pod", pod}, {"Nodes", {{"metadata", json::object()}, {"items", c.api.nodes()}}}, {"NodeNames", nullptr}};
    CHECK(post_json(p, "/prioritize", full) == scores);
    // The best score, a name the answer leaves out scoring 0 (as the scheduler reads it); among equals
    // the first name (the real scheduler picks at random).
    std::string best;
    int64_t top = -1;
    for (const std::string name_sent : {"share-a", "share-b"}) {
      int64_t score = 0;
      for (const auto& s : scores)
        if (s["Host"] == name_sent) score = s["Score"].get<int64_t>();
      if (score > top) top = score, best = name_sent;
    }
    REQUIRE(bind_pod(p, name, best) == "");
    const json bound = c.api.pod("ml", name);
    CHECK(bound["spec"]["nodeName"] == best);
    CHECK(annotation(bound, "ALIYUN_COM_GPU_MEM_DEV") == "16");
    CHECK(annotation(bound, "ALIYUN_COM_GPU_MEM_POD") == std::to_string(gib));
    CHECK(annotation(bound, "ALIYUN_COM_GPU_MEM_ASSIGNED") == "false");
    placed.emplace_back(best, annotation(bound, "ALIYUN_COM_GPU_MEM_IDX"));
  }
  // A pod larger than any GPU, and one no GPU has room for now: the same refusals in both modes.
  for (const auto& [name, gib] : std::vector<std::pair<std::string, int>>{{"huge", 20}, {"wide", 15}, {"small", 4}}) {
    const json pod = share_pod(name, gib);
    const json names = post_json(p, "/filter", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"share-a", "share-b"}}});
    const json full = post_json(
        p, "/filter", {{"Pod", pod}, {"Nodes", {{"metadata", json::object()}, {"items", c.api.nodes()}}}, {"NodeNames", nullptr}});
    CHECK(names["FailedNodes"] == full["FailedNodes"]);
    CHECK(names["FailedAndUnresolvableNodes"] == full["FailedAndUnresolvableNodes"]);
  }
  // share-a's devices as the binds left them, in the refusal of a pod no device there has room for.
  CHECK(post_json(p, "/filter", {{"Pod", share_pod("wide", 17)}, {"Nodes", nullptr}, {"NodeNames", {"share-a"}}})
            ["FailedAndUnresolvableNodes"]["share-a"] == "pod requests 17 GiB of one GPU; the node's GPUs have 16 GiB each");
  const json explained = post_json(p, "/explain", {{"Pod", share_pod("wide", 15)}, {"Nodes", nullptr}, {"NodeNames", {"share-a"}}});
  CHECK(explained["nodes"][0]["facts"]["sharedGpus"]["value"] == "free 0/16, 4/16, 4/16, 16/16 GiB");
  CHECK(placed == std::vector<std::pair<std::string, std::string>>{
                      {"share-a", "0"}, {"share-a", "0"}, {"share-a", "1"}, {"share-a", "0"}, {"share-a", "2"}, {"share-b", "0"}});

  // The kubelet starts the pods in the order they were bound; at each Allocate the device plugin picks
  // a pod by its annotations alone, and must pick this very pod, on the device the extender chose.
  for (size_t i = 0; i < pods.size(); ++i) {
    const auto& [name, gib, placement] = pods[i];
    INFO(name);
    const auto [chosen, device] = device_plugin_allocate(c.api, placed[i].first, gib);
    CHECK(chosen == name);
    CHECK(device == placed[i].second);
  }
}

TEST_CASE("share: concurrent binds to one node never overcommit a device, and a full node says why") {
  ShareCluster c;
  ExtenderProcess p(c.api.extender_args());
  REQUIRE(eventually([&] { return ready(p); }));
  // Eight pods of 8 GiB fill share-a's four 16 GiB GPUs exactly, bound at the same time.
  for (int i = 0; i < 9; ++i) c.api.put_pod(share_pod("half-" + std::to_string(i), 8));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] { errors[static_cast<size_t>(i)] = bind_pod(p, "half-" + std::to_string(i), "share-a"); });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) CHECK(e == "");
  std::map<std::string, int64_t> per_device;
  for (int i = 0; i < 8; ++i)
    per_device[annotation(c.api.pod("ml", "half-" + std::to_string(i)), "ALIYUN_COM_GPU_MEM_IDX")] += 8;
  CHECK(per_device == std::map<std::string, int64_t>{{"0", 16}, {"1", 16}, {"2", 16}, {"3", 16}});
  CHECK(bind_pod(p, "half-8", "share-a") ==
        "cannot bind pod ml/half-8 to share-a: no GPU there has 8 GiB free (free 0/16, 0/16, 0/16, 0/16 GiB)");
  CHECK(annotation(c.api.pod("ml", "half-8"), "ALIYUN_COM_GPU_MEM_IDX").empty());
  CHECK(c.api.pod("ml", "half-8")["spec"].value("nodeName", "").empty());

  // Preemption for a pod wanting a whole 16 GiB GPU: evicting two pods frees one only if they share a
  // device. The log says which device which victims free.
  std::map<std::string, std::vector<std::string>> on_device;  // device -> UIDs
  for (int i = 0; i < 8; ++i) {
    const json pod = c.api.pod("ml", "half-" + std::to_string(i));
    on_device[annotation(pod, "ALIYUN_COM_GPU_MEM_IDX")].push_back(pod["metadata"]["uid"]);
  }
  auto preempt = [&](const std::vector<std::string>& victims) {
    json pods = json::array();
    for (const auto& uid : victims) pods.push_back({{"UID", uid}});
    const json args = {{"Pod", share_pod("whole", 16)},
                       {"NodeNameToMetaVictims", {{"share-a", {{"Pods", pods}, {"NumPDBViolations", 0}}}}}};
    return post_json(p, "/preempt", args)["NodeNameToMetaVictims"];
  };
  CHECK(preempt({on_device["0"][0], on_device["1"][0]}) == json::object());
  CHECK(preempt(on_device["2"]).contains("share-a"));
  CHECK(p.logged("detail=\"share-a: GPU 2 freed by " + on_device["2"][0] + "," + on_device["2"][1]));
}

TEST_CASE("share: a binding that fails releases the device and leaves no annotation claiming it") {
  ShareCluster c;
  ExtenderProcess p(c.api.extender_args());
  REQUIRE(eventually([&] { return ready(p); }));
  c.api.put_pod(share_pod("first", 16));
  c.api.put_pod(share_pod("second", 16));
  c.api.forbid_binds(true);
  CHECK(bind_pod(p, "first", "share-a").find("forbidden") != std::string::npos);
  CHECK(annotation(c.api.pod("ml", "first"), "ALIYUN_COM_GPU_MEM_IDX").empty());
  CHECK(annotation(c.api.pod("ml", "first"), "ALIYUN_COM_GPU_MEM_ASSUME_TIME").empty());
  c.api.forbid_binds(false);
  // GPU 0 is free again: the next pod gets it.
  CHECK(bind_pod(p, "second", "share-a") == "");
  CHECK(annotation(c.api.pod("ml", "second"), "ALIYUN_COM_GPU_MEM_IDX") == "0");
  // A patch the API server refuses: no binding at all.
  c.api.put_pod(share_pod("third", 4));
  c.api.fail_next_patches(1, 403);
  CHECK(bind_pod(p, "third", "share-a").find("patch on pods") != std::string::npos);
  CHECK(c.api.pod("ml", "third")["spec"].value("nodeName", "").empty());
}
