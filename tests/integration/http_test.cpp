// The real binary over loopback HTTP: the bodies a v1.26 scheduler sent, the samples the README uses,
// generated 100-node clusters, flags and policy files, /explain and /preempt.
#include <arpa/inet.h>
#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "../unit/host_scores.h"
#include "../unit/test_support.h"
#include "gpu_extender/wire/wire.h"
#include "extender_process.h"
#include "http_support.h"
#include "raw_connection.h"

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::RawConnection;
using test_support::post;

namespace {

// Every node of the request is answered exactly once, passing nodes are echoed byte for byte, and
// Nodes.items and NodeNames agree.
void check_filter_answer(const std::string& request, const std::string& response) {
  const json in = json::parse(request);
  const json out = json::parse(response);
  REQUIRE(out["Error"] == "");
  std::set<std::string> answered;
  for (const auto& name : out["NodeNames"]) CHECK(answered.insert(name.get<std::string>()).second);
  for (const auto& [name, reason] : out["FailedNodes"].items()) {
    CHECK(answered.insert(name).second);
    CHECK_FALSE(reason.get<std::string>().empty());
  }
  for (const auto& [name, reason] : out["FailedAndUnresolvableNodes"].items()) {
    CHECK(answered.insert(name).second);
    CHECK_FALSE(reason.get<std::string>().empty());
  }
  if (in["Nodes"].is_null()) {
    CHECK(answered.size() == in["NodeNames"].size());
    return;
  }
  CHECK(answered.size() == in["Nodes"]["items"].size());
  REQUIRE(out["Nodes"]["items"].size() == out["NodeNames"].size());
  std::map<std::string, json> sent;
  for (const auto& node : in["Nodes"]["items"]) sent[node["metadata"]["name"]] = node;
  for (size_t i = 0; i < out["Nodes"]["items"].size(); ++i) {
    const json& node = out["Nodes"]["items"][i];
    CHECK(node["metadata"]["name"] == out["NodeNames"][i]);
    CHECK(node == sent.at(node["metadata"]["name"]));
  }
  // Byte for byte: each passing node's bytes, as they stand in the request, stand in the answer.
  // ordered_json keeps key order, so on compact input its dump is the node's original bytes.
  const auto ordered = nlohmann::ordered_json::parse(request);
  const auto names = out["NodeNames"];
  for (const auto& node : ordered["Nodes"]["items"]) {
    const std::string bytes = node.dump();
    REQUIRE(request.find(bytes) != std::string::npos);  // the check itself is sound for this input
    const bool passed = std::find(names.begin(), names.end(), node["metadata"]["name"]) != names.end();
    CHECK((response.find(bytes) != std::string::npos) == passed);
  }
}

std::string generate(const std::string& args) {
  const std::string generator = std::string(GPU_EXTENDER_SOURCE_DIR) + "/bench/gen_requests.py";
  const std::string out = "/tmp/gpu-extender-test-" + std::to_string(getpid()) + ".json";
  const int rc = std::system(("python3 " + generator + " " + args + " --out " + out + " 2>/dev/null").c_str());
  REQUIRE(rc == 0);
  std::string body = test_support::read_file(out);
  std::remove(out.c_str());
  return body;
}

}  // namespace

TEST_CASE("http: full-mode filter and prioritize, as kube-scheduler v1.26 sent them") {
  ExtenderProcess p;
  const std::string filter_body = test_support::fixture("full-mode/filter-1-request.json");
  auto res = post(p, "/filter", filter_body);
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type") == "application/json");
  check_filter_answer(filter_body, res->body);
  // The fixture's nodes, in the compact form the scheduler wrote them, are echoed unchanged.
  const json out = json::parse(res->body);
  CHECK(out["NodeNames"] == json::array({"node-a", "node-b", "node-c"}));

  res = post(p, "/prioritize", test_support::fixture("full-mode/prioritize-2-request.json"));
  REQUIRE(res);
  CHECK(res->status == 200);
  const auto scores =
      test_support::scores_by_host(res->body, test_support::fixture("full-mode/prioritize-2-request.json"));
  CHECK(scores.size() == 3);
  const std::string line = "verb=prioritize pod=default/gpu-pod-1 nodes_in=3";
  CHECK(p.logged(line));
}

TEST_CASE("http: names mode without a node cache answers a clear Error, never a guess") {
  ExtenderProcess p;
  auto res = post(p, "/filter", test_support::fixture("node-cache-mode/filter-1-request.json"));
  REQUIRE(res);
  CHECK(res->status == 200);
  const json out = json::parse(res->body);
  CHECK(out["Error"].get<std::string>().find("nodeCacheCapable") != std::string::npos);
  CHECK(out["NodeNames"].is_null());
  res = post(p, "/prioritize", test_support::fixture("node-cache-mode/prioritize-2-request.json"));
  REQUIRE(res);
  CHECK(res->status == 503);
  CHECK(json::parse(res->body)["Error"].get<std::string>().find("nodeCacheCapable") != std::string::npos);
}

TEST_CASE("http: the README samples") {
  ExtenderProcess p;
  auto res = post(p, "/filter", test_support::sample("filter-gpu-full.json"));
  REQUIRE(res);
  check_filter_answer(test_support::sample("filter-gpu-full.json"), res->body);
  const json out = json::parse(res->body);
  CHECK(out["NodeNames"] == json::array({"a100-8g", "a100-2g", "a100-80g-4g"}));
  CHECK(out["FailedAndUnresolvableNodes"]["t4-4g"] == "gpu model T4 does not match requested A100");

  res = post(p, "/bind", test_support::sample("bind.json"));
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(json::parse(res->body)["Error"].get<std::string>().find("no Kubernetes API access") != std::string::npos);
}

TEST_CASE("http: the aaa/bbb example with a pods snapshot") {
  ExtenderProcess p({"--pods-snapshot", test_support::source_path("extender-config/samples/pods-aaa-start.json")});
  auto res = post(p, "/prioritize", test_support::sample("filter-aaa-full.json"));
  REQUIRE(res);
  const auto score = test_support::scores_by_host(res->body, test_support::sample("filter-aaa-full.json"));
  CHECK(score.at("master") > score.at("worker1"));
  res = post(p, "/filter", test_support::sample("filter-aaa-full.json"));
  REQUIRE(res);
  CHECK(json::parse(res->body)["FailedAndUnresolvableNodes"].contains("worker2"));
}

TEST_CASE("http: generated 100-node clusters, full and names mode, GPU and aaa pods") {
  ExtenderProcess p;
  for (const std::string pod : {"gpu", "aaa", "plain"}) {
    INFO("pod " << pod);
    const std::string body = generate("--nodes 100 --pod " + pod + " --managed-fields --seed 3");
    auto res = post(p, "/filter", body);
    REQUIRE(res);
    REQUIRE(res->status == 200);
    check_filter_answer(body, res->body);
    const json out = json::parse(res->body);
    // The nodes that must pass, read from the request by the design document's rules (no usage is
    // known): never one with bbb (every 10 nodes hold one); the GPU pod's A100, 40960 MiB, 2 GPUs;
    // the aaa pod's aaa.
    std::set<std::string> expected;
    const json request = json::parse(body);  // kept: a range-for over a temporary's member dangles
    for (const auto& node : request["Nodes"]["items"]) {
      const json& labels = node["metadata"]["labels"];
      const json& allocatable = node["status"]["allocatable"];
      if (allocatable.contains("custom.resource/bbb")) continue;
      if (pod == "gpu" && !(labels.value("gpu.nvidia.com/model", "") == "A100" &&
                            std::stoi(labels.value("gpu.nvidia.com/memory", "0")) >= 40960 &&
                            std::stoi(labels.value("gpu.nvidia.com/count", "0")) >= 2))
        continue;
      if (pod == "aaa" && !allocatable.contains("custom.resource/aaa")) continue;
      expected.insert(node["metadata"]["name"].get<std::string>());
    }
    REQUIRE_FALSE(expected.empty());  // the generated cluster holds nodes for every kind of pod
    CHECK(out["NodeNames"].get<std::set<std::string>>() == expected);

    res = post(p, "/prioritize", body);
    REQUIRE(res);
    REQUIRE(res->status == 200);
    const auto scores = test_support::scores_by_host(res->body, body);
    CHECK(scores.size() == 100);
    size_t scored = 0;
    for (const auto& [host, score] : scores) {
      if (!expected.count(host)) CHECK(score == 0);  // refused nodes score 0
      scored += score > 0;
    }
    if (pod != "plain") CHECK(scored > 0);  // a GPU or aaa pod gets an opinion; a plain pod a neutral 0
  }
}

TEST_CASE("http: answers are not gzipped even when the scheduler accepts gzip") {
  ExtenderProcess p;
  httplib::Client client("127.0.0.1", p.port());
  httplib::Headers headers{{"Accept-Encoding", "gzip"}};
  const std::string body = test_support::fixture("full-mode/filter-1-request.json");
  auto res = client.Post("/filter", headers, body, "application/json");
  REQUIRE(res);
  CHECK(res->get_header_value("Content-Encoding").empty());
  check_filter_answer(body, res->body);
}

TEST_CASE("http: concurrent requests on kept-alive connections all succeed") {
  ExtenderProcess p;
  const std::string body = test_support::sample("filter-gpu-full.json");
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      httplib::Client client("127.0.0.1", p.port());
      client.set_keep_alive(true);
      for (int i = 0; i < 25; ++i) {
        auto res = client.Post("/filter", body, "application/json");
        if (res && res->status == 200 && json::parse(res->body)["NodeNames"].size() == 3) ++ok;
      }
    });
  }
  for (auto& c : clients) c.join();
  CHECK(ok == 200);
}

TEST_CASE("binary: flags, policy files and --check-config") {
  using test_support::run_binary;
  auto r = run_binary({"--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.rfind("gpu-extender ", 0) == 0);
  r = run_binary({"--help"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("--max-body-bytes") != std::string::npos);
  r = run_binary({"--bogus"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("unknown flag --bogus") != std::string::npos);
  r = run_binary({"--port", "-1"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--port") != std::string::npos);
  r = run_binary({"--policy", "/nonexistent.yaml"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("/nonexistent.yaml: cannot be read") != std::string::npos);

  const std::string bad_policy = "/tmp/gpu-extender-bad-policy-" + std::to_string(getpid()) + ".yaml";
  {
    std::ofstream(bad_policy) << "scorers:\n  - name: gpuFit\n    weight: heavy\n";
  }
  r = run_binary({"--policy", bad_policy});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("scorers[0].weight: expected a whole number") != std::string::npos);
  std::remove(bad_policy.c_str());

  r = run_binary({"--check-config", "--policy", test_support::source_path("extender-config/policy.yaml"),
                  "--pods-snapshot", test_support::source_path("extender-config/samples/pods-aaa-start.json")});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("configuration ok") != std::string::npos);
}

TEST_CASE("http: /explain answers why each node won or lost") {
  ExtenderProcess p;
  auto res = post(p, "/explain", test_support::sample("filter-gpu-full.json"));
  REQUIRE(res);
  CHECK(res->status == 200);
  const json e = json::parse(res->body);
  CHECK(e["pod"] == "default/train-a100");
  CHECK(e["best"] == "a100-80g-4g");
  CHECK(e["nodes"].size() == 9);
  CHECK(e["nodes"].back()["verdict"] == "fail-unresolvable");
  res = post(p, "/explain", "{\"Pod\":");
  REQUIRE(res);
  CHECK(res->status == 400);
}

TEST_CASE("http: a pod with a bad GPU annotation gets 200 and its reason on every node") {
  // kube-scheduler drops the body of a non-200 answer ("code 400" is all kubectl describe shows):
  // a well-formed request about a pod that cannot be judged is a 200 that refuses every node.
  ExtenderProcess p;
  json body = json::parse(test_support::sample("filter-gpu-full.json"));
  body["Pod"]["metadata"]["annotations"]["gpu.nvidia.com/memory"] = "40GB";
  auto res = post(p, "/filter", body.dump());
  REQUIRE(res);
  CHECK(res->status == 200);
  const json out = json::parse(res->body);
  CHECK(out["Error"] == "");
  CHECK(out["NodeNames"] == json::array());
  CHECK(out["FailedNodes"] == json::object());
  REQUIRE(out["FailedAndUnresolvableNodes"].size() == body["Nodes"]["items"].size());
  for (const auto& [node, reason] : out["FailedAndUnresolvableNodes"].items())
    CHECK(reason.get<std::string>().rfind("pod annotation gpu.nvidia.com/memory: invalid quantity \"40GB\"", 0) == 0);
  // /prioritize of the same pod: every node refused, every node 0.
  res = post(p, "/prioritize", body.dump());
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(json::parse(res->body) == json::array());  // every node 0, so none listed
}

TEST_CASE("http: /prioritize gives 0 to nodes its filter refuses, and scores the rest as after /filter") {
  // An extender registered with prioritizeVerb alone is sent nodes its filter would refuse.
  ExtenderProcess p;
  auto res = post(p, "/prioritize", test_support::sample("filter-gpu-full.json"));
  REQUIRE(res);
  const auto score = test_support::scores_by_host(res->body, test_support::sample("filter-gpu-full.json"));
  for (const char* refused : {"a100-1g", "a100-20g-4g", "v100-8g", "t4-4g", "a100-4g-bbb", "cpu-only"})
    CHECK(score.at(refused) == 0);
  // The three that pass, scored by the README's formulas from the sample's own nodes.
  const json request = json::parse(test_support::sample("filter-gpu-full.json"));
  const auto expected = test_support::default_policy_scores(request, {"a100-80g-4g", "a100-2g", "a100-8g"});
  CHECK(score == expected);
  CHECK(expected.at("a100-80g-4g") > expected.at("a100-2g"));  // raw 86 against 85: still apart
  CHECK(expected.at("a100-2g") > expected.at("a100-8g"));
}

TEST_CASE("http: GPU requests that would overflow are too many, not one") {
  ExtenderProcess p;
  json body = json::parse(test_support::sample("filter-gpu-full.json"));
  json containers = json::array();
  for (const char* gpus : {"9223372036854775", "9223372036854775", "2"})
    containers.push_back({{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", gpus}}}}}});
  body["Pod"]["spec"]["containers"] = containers;
  auto res = post(p, "/filter", body.dump());
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(json::parse(res->body)["NodeNames"] == json::array());
}

TEST_CASE("http: /preempt that cannot be served is a non-200, not an empty 200") {
  // ExtenderPreemptionResult has no Error field: an Error in a 200 reads as "no candidates".
  ExtenderProcess p;
  auto res = post(p, "/preempt", R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToVictims":{}})");
  REQUIRE(res);
  CHECK(res->status == 503);
  CHECK(json::parse(res->body)["Error"].get<std::string>().find("Kubernetes API access") != std::string::npos);
}

TEST_CASE("http: a GPU Operator node (GPU Feature Discovery labels only) is judged with the default policy") {
  ExtenderProcess p;
  auto gfd_node = [](const std::string& name, const std::string& product, const std::string& memory,
                     const std::string& family = "ampere") {
    return json{{"metadata",
                 {{"name", name},
                  {"labels",
                   {{"nvidia.com/gpu.product", product}, {"nvidia.com/gpu.memory", memory}, {"nvidia.com/gpu.count", "8"},
                    {"nvidia.com/gpu.family", family}}}}},
                {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
  };
  const json pod = {{"metadata",
                     {{"name", "train"},
                      {"namespace", "default"},
                      {"annotations", {{"gpu.nvidia.com/model", "A100"}, {"gpu.nvidia.com/memory", "81920"}}}}},
                    {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
  const json body = {{"Pod", pod},
                     {"Nodes",
                      {{"items",
                        {gfd_node("a100-80", "NVIDIA-A100-SXM4-80GB", "81920"), gfd_node("a100-40", "NVIDIA-A100-PCIE-40GB", "40536"),
                         gfd_node("h100", "NVIDIA-H100-80GB-HBM3", "81559", "hopper")}}}}};
  auto res = post(p, "/filter", body.dump());
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const json out = json::parse(res->body);
  CHECK(out["NodeNames"] == json::array({"a100-80"}));
  CHECK(out["FailedAndUnresolvableNodes"]["a100-40"] ==
        "gpu memory 40536 MiB per GPU (judged 40 GiB, the size it is sold with) is below requested 81920 MiB");
  CHECK(out["FailedAndUnresolvableNodes"]["h100"] == "gpu model NVIDIA-H100-80GB-HBM3 does not match requested A100");
  // /explain says where each fact came from.
  auto explained = post(p, "/explain", body.dump());
  REQUIRE(explained);
  const json e = json::parse(explained->body);
  CHECK(e["best"] == "a100-80");
  CHECK(e["nodes"][0]["facts"]["gpuModel"]["label"] == "nvidia.com/gpu.product");
  CHECK(e["nodes"][0]["facts"]["gpuMemory"]["value"] == "81920");
  // NVML's 81559 MiB for an H100 (GFD's label) is judged as the 80 GiB it is sold with.
  CHECK(e["nodes"][2]["facts"]["gpuMemory"]["value"] == "81559");
  CHECK(e["nodes"][2]["facts"]["gpuMemoryJudged"]["value"] == "81920");
  CHECK(e["nodes"][2]["facts"]["gpuMemoryJudged"]["label"] == "gpuMemory 81559 MiB as the size it is sold with");
  CHECK(e["nodes"][0]["facts"]["gpuFamily"]["label"] == "nvidia.com/gpu.family");
  // A pod that asks for a family only: the hopper node.
  json by_family = body;
  by_family["Pod"]["metadata"]["annotations"] = {{"gpu.nvidia.com/family", "hopper"}};
  res = post(p, "/filter", by_family.dump());
  REQUIRE(res);
  const json family_out = json::parse(res->body);
  CHECK(family_out["NodeNames"] == json::array({"h100"}));
  CHECK(family_out["FailedAndUnresolvableNodes"]["a100-80"] == "gpu family ampere does not match requested hopper");
}
