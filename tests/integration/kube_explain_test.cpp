// The tools against a live cluster (a fake API server over TLS with a bearer token, through a
// kubeconfig): gpu-extender explain --pod NS/NAME, and the binary as the kubectl plugin.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <map>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"

using nlohmann::json;
using test_support::FakeApiServer;
using test_support::make_node;
using test_support::make_pod;

TEST_CASE("explain: --kubeconfig and --pod NS/NAME explain a pending pod from the live cluster") {
  FakeApiServer api;
  api.put_node(make_node("a100-free", "A100", 4));
  api.put_node(make_node("a100-busy", "A100", 4));
  api.put_pod(make_pod("default", "running", "uid-run", "a100-busy", 3));              // 1 GPU left there
  api.put_pod(make_pod("default", "finished", "uid-done", "a100-free", 4, 0, "Succeeded"));  // holds nothing
  api.put_pod(make_pod("team-a", "train", "uid-train", "", 2));                        // the pending pod
  const std::string kubeconfig = api.write_kubeconfig();

  const auto r = test_support::run_binary(
      {"explain", "--kubeconfig", kubeconfig, "--pod", "team-a/train", "--format", "json"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json e = json::parse(r.output.substr(r.output.find('{')));
  CHECK(e["pod"] == "team-a/train");
  CHECK(e["best"] == "a100-free");  // the finished pod's GPUs are free again
  std::map<std::string, json> by_node;
  for (const auto& n : e["nodes"]) by_node[n["node"]] = n;
  REQUIRE(by_node.size() == 2);
  CHECK(by_node["a100-busy"]["verdict"] != "pass");  // the running pod's 3 GPUs are counted
  CHECK(by_node["a100-busy"]["rule"] == "gpuCount");
  CHECK(api.list_requests("pods") == 1);
  CHECK(api.list_requests("nodes") == 1);

  // The table, as an operator reads it; and a pod that does not exist says so.
  const auto table = test_support::run_binary({"explain", "--kubeconfig", kubeconfig, "--pod", "team-a/train"});
  CHECK(table.output.find("pod team-a/train (placement binpack): best node a100-free") != std::string::npos);
  const auto missing = test_support::run_binary({"explain", "--kubeconfig", kubeconfig, "--pod", "team-a/nope"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("GET /api/v1/namespaces/team-a/pods/nope: HTTP 404") != std::string::npos);
}

TEST_CASE("kubectl plugin: installed as kubectl-gpu_extender, explain NS/POD says why, from $KUBECONFIG") {
  FakeApiServer api;
  api.put_node(make_node("a100-busy", "A100", 4));
  api.put_node(make_node("t4", "T4", 8));
  api.put_pod(make_pod("default", "running", "uid-run", "a100-busy", 3));
  json train = make_pod("team-a", "train", "uid-train", "", 2);  // asks 2 A100s: 1 is free
  train["metadata"]["annotations"]["gpu.nvidia.com/model"] = "A100";
  api.put_pod(train);
  const std::string kubeconfig = api.write_kubeconfig();
  // kubectl finds a plugin by its file name on PATH and runs it with the words after the plugin's name.
  char folder[] = "/tmp/gpu-extender-plugin-XXXXXX";
  REQUIRE(mkdtemp(folder) != nullptr);
  const std::string plugin = std::string(folder) + "/kubectl-gpu_extender";
  REQUIRE(symlink(GPU_EXTENDER_BINARY, plugin.c_str()) == 0);
  const std::string env = "KUBECONFIG='" + kubeconfig + ":/nonexistent' ";

  const auto words = test_support::run_command(env + plugin + " explain team-a/train 2>&1");
  INFO(words.output);
  REQUIRE(words.exit_code == 0);
  // Words first: no node, counted by rule with a reason each; then the table.
  CHECK(words.output.find("Pod team-a/train fits no node: ") == 0);
  CHECK(words.output.find("1 refused by gpuCount (a100-busy: ") != std::string::npos);
  CHECK(words.output.find("1 refused by gpuModel (t4: ") != std::string::npos);
  CHECK(words.output.find("NODE") != std::string::npos);

  const auto as_json = test_support::run_command(env + plugin + " explain train -n team-a -o json 2>&1");
  INFO(as_json.output);
  REQUIRE(as_json.exit_code == 0);
  const json e = json::parse(as_json.output.substr(as_json.output.find('{')));
  CHECK(e["pod"] == "team-a/train");
  CHECK(e["best"].is_null());

  const auto wrong = test_support::run_command(env + plugin + " explain team-a/train -o yaml 2>&1");
  CHECK(wrong.exit_code == 2);
  CHECK(wrong.output.find("-o takes json") != std::string::npos);
  CHECK(test_support::run_command(plugin + " frobnicate 2>&1").output.find("unknown command frobnicate") != std::string::npos);
  unlink(plugin.c_str());
  rmdir(folder);
}
