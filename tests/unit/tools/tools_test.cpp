// explain and simulate on the shipped examples: the outcomes the README promises.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>

#include "tools/tools.h"
#include "test_support.h"

using namespace gpu_extender;
using nlohmann::json;

namespace {
std::string example(const std::string& name) { return test_support::source_path("extender-config/examples/" + name); }

json simulate(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  std::vector<std::string> all = args;
  all.insert(all.end(), {"--format", "json"});
  REQUIRE(run_simulate(all, out, err) == 0);
  return json::parse(out.str());
}

std::vector<std::string> placements(const json& result) {
  std::vector<std::string> nodes;
  for (const auto& p : result) nodes.push_back(p["node"].is_null() ? "-" : p["node"].get<std::string>());
  return nodes;
}
// The entry of `nodes` (an explanation's) for `name`; null when there is none.
json node_named(const json& nodes, const std::string& name) {
  for (const auto& n : nodes)
    if (n["node"] == name) return n;
  return nullptr;
}

}  // namespace

TEST_CASE("simulate: the aaa/bbb experiment of the design document") {
  // master has 3 of 5 aaa in use: the first pods go there; bbb's worker2 is never used.
  const json start = simulate({"--nodes", example("aaa-bbb/nodes.yaml"), "--pods-snapshot", example("aaa-bbb/pods-start.yaml"),
                               "--place", example("aaa-bbb/place.yaml")});
  CHECK(placements(start) == std::vector<std::string>{"master", "master", "worker1", "worker1"});
  for (const auto& p : start) {
    const json worker2 = node_named(p["explanation"]["nodes"], "worker2");
    REQUIRE(worker2.is_object());  // every pod's explanation judges every node
    CHECK(worker2["rule"] == "excludedResources");
  }
  // master and worker1 both with 4 in use: worker1 (more aaa) takes the next pod.
  const json tied = simulate({"--nodes", example("aaa-bbb/nodes.yaml"), "--pods-snapshot", example("aaa-bbb/pods-tied.yaml"),
                              "--place", example("aaa-bbb/place.yaml")});
  CHECK(placements(tied).front() == "worker1");
}

TEST_CASE("simulate: the GPU pod against a mixed fleet") {
  const json result = simulate({"--nodes", example("gpu-fleet/nodes.yaml"), "--pods-snapshot",
                                example("gpu-fleet/pods-running.yaml"), "--place", example("gpu-fleet/place.yaml")});
  CHECK(placements(result) == std::vector<std::string>{"a100-80g-4g", "a100-2g", "a100-80g-4g", "-"});
}

TEST_CASE("explain: a table best first, and the same as JSON, from kubectl YAML or an ExtenderArgs body") {
  std::ostringstream table, err;
  REQUIRE(run_explain({"--pod", example("gpu-fleet/pod.yaml"), "--nodes", example("gpu-fleet/nodes.yaml"), "--pods-snapshot",
                       example("gpu-fleet/pods-running.yaml")},
                      table, err) == 0);
  CHECK(table.str().rfind("pod default/train-a100 (placement binpack): best node a100-80g-4g\nNODE", 0) == 0);
  CHECK(table.str().find("gpuFit(w7)") != std::string::npos);
  CHECK(table.str().find("gpu model T4 does not match requested A100") != std::string::npos);

  std::ostringstream out;
  REQUIRE(run_explain({"--args", test_support::source_path("extender-config/samples/filter-gpu-full.json"), "--format", "json"},
                      out, err) == 0);
  const json e = json::parse(out.str());
  CHECK(e["best"] == "a100-80g-4g");
  CHECK(e["nodes"][0]["scorers"][0]["name"] == "gpuFit");
  CHECK(e["nodes"][0]["scorers"][0]["raw"] == 80.0);
  CHECK(e["nodes"].size() == 9);
}

TEST_CASE("explain: a GPU Operator fleet, judged from GPU Feature Discovery's labels alone") {
  std::ostringstream out, err;
  REQUIRE(run_explain({"--pod", example("gpu-operator/pod.yaml"), "--nodes", example("gpu-operator/nodes.yaml"),
                       "--format", "json"},
                      out, err) == 0);
  const json e = json::parse(out.str());
  std::map<std::string, json> nodes;
  for (const auto& n : e["nodes"]) nodes[n["node"]] = n;
  // "A100" matches both product names; the time-sliced one is ranked by its 2 whole GPUs (fit 90),
  // not by its 8 shares (fit 30, as the 8-GPU node).
  CHECK(e["best"] == "a100-shared");
  CHECK(nodes["a100-shared"]["scorers"][0]["raw"] == 90.0);
  CHECK(nodes["a100-80g"]["scorers"][0]["raw"] == 30.0);
  CHECK(nodes["a100-40g-pcie"]["verdict"] == "pass");
  CHECK(nodes["a100-shared"]["facts"]["gpuReplicas"] == json({{"value", "4"}, {"label", "nvidia.com/gpu.replicas"}}));
  CHECK(nodes["a100-shared"]["facts"]["gpuModel"]["label"] == "nvidia.com/gpu.product");
  // MIG single strategy: the slice's memory is the GPU memory.
  CHECK(nodes["a100-mig-single"]["reason"] == "gpu memory 4864 MiB per GPU is below requested 40960 MiB");
  // MIG mixed strategy: the slices are other resources; no whole GPU is left.
  CHECK(nodes["a100-mig-mixed"]["reason"] == "node offers no nvidia.com/gpu; pod requests 1");
  CHECK(nodes["h100"]["reason"] == "gpu model NVIDIA-H100-80GB-HBM3 does not match requested A100");

  // The same fleet and pod as a kube-scheduler request body, for curl: the same answer.
  std::ostringstream from_args;
  REQUIRE(run_explain({"--args", test_support::source_path("extender-config/samples/filter-gpu-operator-full.json"),
                       "--format", "json"},
                      from_args, err) == 0);
  CHECK(json::parse(from_args.str())["nodes"] == e["nodes"]);
}

TEST_CASE("explain and simulate: MIG slices of the mixed strategy, with the profiles in the policy") {
  const std::string policy = example("gpu-operator/mig-policy.yaml");
  std::ostringstream out, err;
  REQUIRE(run_explain({"--pod", example("gpu-operator/mig-pod.yaml"), "--nodes", example("gpu-operator/nodes.yaml"),
                       "--policy", policy, "--format", "json"},
                      out, err) == 0);
  const json e = json::parse(out.str());
  std::map<std::string, json> nodes;
  for (const auto& n : e["nodes"]) nodes[n["node"]] = n;
  CHECK(e["best"] == "a100-mig-mixed");
  CHECK(nodes["a100-mig-mixed"]["facts"]["migSliceMemory nvidia.com/mig-2g.10gb"] ==
        json({{"value", "9984"}, {"label", "nvidia.com/mig-2g.10gb.memory"}}));
  CHECK(nodes["a100-80g"]["reason"] == "node offers no nvidia.com/mig-2g.10gb; pod requests 1");
  // Placed one after another, the slices run out: the fourth pod's profile has none left.
  const json placed = simulate({"--nodes", example("gpu-operator/nodes.yaml"), "--place",
                                example("gpu-operator/mig-place.yaml"), "--policy", policy});
  CHECK(placements(placed) == std::vector<std::string>{"a100-mig-mixed", "a100-mig-mixed", "a100-mig-mixed", "-"});
  const json mixed = node_named(placed[3]["explanation"]["nodes"], "a100-mig-mixed");
  REQUIRE(mixed.is_object());
  CHECK(mixed["reason"] == "only 0 of 2 nvidia.com/mig-2g.10gb slices free; pod requests 1");
}

TEST_CASE("explain and simulate: GPUs shared by memory, placed on devices as the README promises") {
  const json placed =
      simulate({"--nodes", example("gpu-share/nodes.yaml"), "--place", example("gpu-share/place.yaml")});
  CHECK(placements(placed) ==
        std::vector<std::string>{"share-a", "share-a", "share-a", "share-a", "share-a", "share-b", "-"});
  std::vector<int> devices;
  for (const auto& p : placed) devices.push_back(p.value("sharedGpu", -1));
  CHECK(devices == std::vector<int>{0, 0, 1, 0, 2, 0, -1});
  CHECK(placed[5]["explanation"]["placement"] == "spread");

  // Usage from pods bound with gpushare's annotations: each device's free memory, as explain shows it.
  std::ostringstream out, err;
  REQUIRE(run_explain({"--pod", example("gpu-share/pod.yaml"), "--nodes", example("gpu-share/nodes.yaml"),
                       "--pods-snapshot", example("gpu-share/pods-running.yaml"), "--format", "json"},
                      out, err) == 0);
  const json e = json::parse(out.str());
  CHECK(e["best"] == "share-a");
  std::map<std::string, json> nodes;
  for (const auto& n : e["nodes"]) nodes[n["node"]] = n;
  CHECK(nodes["share-a"]["facts"]["sharedGpus"]["value"] == "free 4/16, 16/16, 16/16, 16/16 GiB");
  CHECK(nodes["share-b"]["facts"]["sharedGpus"]["value"] == "free 16/16, 6/16, 16/16, 16/16 GiB");
}

TEST_CASE("explain and simulate: errors name the file and the field") {
  std::ostringstream out, err;
  const std::string bad = "/tmp/gpu-extender-bad-nodes-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(bad) << "kind: NodeList\nitems:\n- metadata:\n    name: n\n  status:\n    allocatable:\n      nvidia.com/gpu: lots\n";
  CHECK(run_simulate({"--nodes", bad, "--place", example("aaa-bbb/place.yaml")}, out, err) == 2);
  CHECK(err.str() == "gpu-extender simulate: " + bad +
                         ": items[0].status.allocatable.nvidia.com/gpu: invalid quantity \"lots\": no digits\n");
  std::remove(bad.c_str());
  err.str("");
  CHECK(run_explain({"--pod", "/nonexistent.yaml", "--nodes", example("gpu-fleet/nodes.yaml")}, out, err) == 2);
  CHECK(err.str() == "gpu-extender explain: /nonexistent.yaml: cannot be read\n");
  err.str("");
  CHECK(run_explain({"--args", test_support::source_path("tests/fixtures/kube-scheduler-v1.26/node-cache-mode/filter-1-request.json")}, out, err) == 2);
  CHECK(err.str().find("names mode") != std::string::npos);
  err.str("");
  CHECK(run_simulate({"--nodes", example("aaa-bbb/nodes.yaml")}, out, err) == 2);
  CHECK(err.str().find("--place") != std::string::npos);
  err.str("");
  CHECK(run_explain({"--bogus", "x"}, out, err) == 2);
  CHECK(err.str() == "gpu-extender explain: unknown flag --bogus\n");
}

TEST_CASE("simulate and explain: distributed jobs on the EKS fleet of three layer-3 blocks") {
  const std::vector<std::string> files{"--nodes", example("topology/nodes.yaml"), "--pods-snapshot",
                                       example("topology/pods-running.yaml")};
  std::vector<std::string> args = files;
  args.insert(args.end(), {"--place", example("topology/place.yaml")});
  const json result = simulate(args);
  // llama (4 x 8, required layer 3) takes block b whole (the only one with room for 4), eval-0 packs
  // onto block a, mistral (3 x 8, preferred) fills block c; gemma (4 x 8, required) fits no block: all wait.
  CHECK(placements(result) == std::vector<std::string>{"p5-b0", "p5-b1", "p5-b2", "p5-b3", "p5-a2", "p5-c1", "p5-c2",
                                                       "p5-c3", "-", "-", "-", "-"});
  CHECK(result[8]["explanation"]["group"]["reason"] ==
        "group team-a/gemma (4 pods x 8 nvidia.com/gpu) needs one topology.k8s.aws/network-node-layer-3 domain; the "
        "best, nn-3a, has room for 1");

  std::ostringstream out, err;
  args = files;
  args.insert(args.end(), {"--pod", example("topology/pod.yaml"), "--format", "json"});
  REQUIRE(run_explain(args, out, err) == 0);
  const json e = json::parse(out.str());
  CHECK(e["group"]["constraint"] == "required topology.k8s.aws/network-node-layer-3");
  CHECK(e["group"]["domains"] == json::array({"us-east-1a/nn-1a/nn-2a/nn-3b"}));
  CHECK(e["group"]["considered"][0]["room"] == 4);
  CHECK(e["group"]["considered"].size() == 3);
  CHECK(e["group"]["members"].size() == 4);
  const json b0 = node_named(e["nodes"], "p5-b0");
  REQUIRE(!b0.is_null());
  CHECK(b0["facts"]["topology"]["value"].get<std::string>().find("nn-3b (topology.k8s.aws/network-node-layer-3)") !=
        std::string::npos);
}
