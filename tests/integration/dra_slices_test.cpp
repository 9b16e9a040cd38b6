// DRA nodes through the watch: a node that publishes its GPUs as ResourceSlices of NVIDIA's driver (no GPU
// labels, no nvidia.com/gpu allocatable, as with DRA extended resources) is judged on them; pods bound
// there asking nvidia.com/gpu count against them; a slice deleted takes the GPUs away; objects as the
// driver writes them (MIG devices, device taints, republished pools) get the scheduler's verdicts; a
// group in a mixed cluster is planned only on nodes its members can use. An API server that serves no
// DRA (404, before 1.34) is the fake's default, which every other test runs with.
#include <catch2/catch.hpp>

#include <set>

#include "../unit/test_support.h"
#include "dra_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "http_support.h"
#include "metrics_support.h"
#include "scheduler_driver.h"

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;
using namespace dra_support;

namespace {

// The MIG devices of a GPU in MIG mode (no whole device is published for it): 7 x 1g.10gb of an A100
// 80GB, named gpu-<minor>-mig-<profile>-<profileId>-<placementStart>, tied to the parent by parentUUID.
json mig_devices(const std::string& node, int minor) {
  json out = json::array();
  for (int start = 0; start < 7; ++start)
    out.push_back({{"name", "gpu-" + std::to_string(minor) + "-mig-1g10gb-19-" + std::to_string(start)},
                   {"attributes",
                    {{"type", {{"string", "mig"}}},
                     {"uuid", {{"string", "MIG-" + node + "-" + std::to_string(minor) + "-" + std::to_string(start)}}},
                     {"parentUUID", {{"string", "GPU-" + node + "-" + std::to_string(minor)}}},
                     {"profile", {{"string", "1g.10gb"}}},
                     {"productName", {{"string", "NVIDIA A100-SXM4-80GB"}}},
                     {"architecture", {{"string", "Ampere"}}},
                     {"resource.kubernetes.io/pciBusID", {{"string", "0000:" + std::to_string(10 + minor) + ":00.0"}}}}},
                   {"capacity", {{"memory", {{"value", "9856Mi"}}}, {"multiprocessors", {{"value", "14"}}}}}});
  return out;
}

}  // namespace

TEST_CASE("DRA: a node's ResourceSlices give it GPUs the rules read, and bound pods count against them") {
  FakeApiServer api;
  api.put_node(test_support::make_node("dra-0", "", 0));    // no GPU labels, no nvidia.com/gpu
  api.put_node(test_support::make_node("plain-0", "", 0));  // no GPUs at all
  api.put_resource_slice(h100_slice("dra-0", 8));
  json bound = test_support::make_pod("burst", "running", "uid-running", "dra-0", 4);  // 4 of its 8 in use
  api.put_pod(bound);
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));

  REQUIRE(test_support::eventually([&] { return names_filter(p, h100_pod("four", 4))["NodeNames"] == json::array({"dra-0"}); }));
  const json five = names_filter(p, h100_pod("five", 5));
  CHECK(five["NodeNames"].empty());
  INFO(five.dump());
  CHECK(five["FailedNodes"]["dra-0"].get<std::string>().find("GPUs free") != std::string::npos);
  CHECK(five["FailedAndUnresolvableNodes"].contains("plain-0"));
  json a100 = test_support::pending_pod("a100", 1, 0);  // annotated A100: the slices say H100
  CHECK(names_filter(p, a100)["NodeNames"].empty());

  // The driver withdraws the slice (uninstalled, or the node drained of GPUs): no GPUs there any more.
  api.delete_resource_slice("dra-0-gpu.nvidia.com-x7k2p");
  CHECK(test_support::eventually([&] { return names_filter(p, h100_pod("four", 4))["NodeNames"].empty(); }));
}

TEST_CASE("DRA: in a mixed cluster a group is planned only on the nodes its members can use, of either kind") {
  FakeApiServer api;
  for (const char* n : {"dra-0", "dra-1"}) {
    api.put_node(test_support::make_node(n, "", 0));
    api.put_resource_slice(h100_slice(n, 8));  // H100s by DRA
  }
  for (const char* n : {"lab-0", "lab-1"}) api.put_node(test_support::make_node(n, "A100", 8));  // by device plugin
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));
  auto first_member = [](const std::string& group, const std::string& model) {
    json pod = test_support::pending_pod(group + "-0", 8, 0);
    auto& a = pod["metadata"]["annotations"];
    a["gpu.nvidia.com/model"] = model;
    a["gpu.nvidia.com/group"] = group;
    a["gpu.nvidia.com/group-size"] = "2";
    return json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"dra-0", "lab-0", "dra-1", "lab-1"}}};
  };
  auto passed = [&](const json& body) {
    auto res = test_support::post(p, "/filter", body.dump());
    REQUIRE(res);
    const json answer = json::parse(res->body);  // kept: a range over a temporary's member would dangle
    std::set<std::string> out;
    for (const auto& n : answer["NodeNames"]) out.insert(n.get<std::string>());
    return out;
  };
  REQUIRE(test_support::eventually([&] { return names_filter(p, h100_pod("probe", 8))["NodeNames"] == json::array({"dra-0"}); }));
  const std::set<std::string> h100 = passed(first_member("h100-job", "H100"));
  CHECK(h100 == std::set<std::string>{"dra-0", "dra-1"});  // one member a node: the group's two H100 nodes
  const std::set<std::string> a100 = passed(first_member("a100-job", "A100"));
  CHECK(a100 == std::set<std::string>{"lab-0", "lab-1"});
  // The H100 group holds both DRA nodes for its members: a second H100 group finds no room, though the
  // A100 nodes are free (its members cannot use them).
  CHECK(passed(first_member("h100-late", "H100")).empty());
}

TEST_CASE("DRA: objects as NVIDIA's driver writes them get the verdicts the scheduler's allocator would") {
  FakeApiServer api;
  api.put_node(test_support::make_node("dra-0", "", 0));
  api.put_node(test_support::make_node("plain-0", "", 0));
  api.put_resource_slice(h100_slice("dra-0", 8));
  // A mixed node: 4 whole A100s and 4 in MIG mode; seven MIG claims on one parent (gpu-4).
  api.put_node(test_support::make_node("mixed", "", 0));
  json mixed = json::array();
  for (int i = 0; i < 4; ++i) mixed.push_back(whole_gpu("mixed", i, "NVIDIA A100-SXM4-80GB", "Ampere", "81920Mi"));
  for (int i = 4; i < 8; ++i)
    for (const json& d : mig_devices("mixed", i)) mixed.push_back(d);
  api.put_resource_slice(slice_of("mixed", mixed));
  for (int start = 0; start < 7; ++start) {
    json claim = allocated_claim("mig-" + std::to_string(start), {"gpu-4-mig-1g10gb-19-" + std::to_string(start)},
                                 "uid-mig-" + std::to_string(start));
    claim["status"]["allocation"]["devices"]["results"][0]["pool"] = "mixed";
    claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = {"mixed"};
    api.put_resource_claim(claim);
  }
  // A monitoring claim over all of dra-0's GPUs with admin access, as DCGM-style tools claim devices.
  json monitor = allocated_claim("dcgm", {"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"}, "uid-dcgm");
  for (auto& r : monitor["status"]["allocation"]["devices"]["results"]) r["adminAccess"] = true;
  monitor["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All";
  monitor["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = true;
  api.put_resource_claim(monitor);
  // An L40S node (go-nvlib's architecture name "Ada Lovelace").
  api.put_node(test_support::make_node("ada-0", "", 0));
  api.put_resource_slice(slice_of("ada-0", json::array({whole_gpu("ada-0", 0, "NVIDIA L40S", "Ada Lovelace", "46068Mi")})));
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));
  auto filter = [&](const json& pod, const std::vector<std::string>& nodes) {
    const json body = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes}};
    auto res = test_support::post(p, "/filter", body.dump());
    REQUIRE(res);
    return json::parse(res->body);
  };
  auto fits = [&](const json& pod, const std::string& node) { return filter(pod, {node})["NodeNames"] == json::array({node}); };
  REQUIRE(test_support::eventually([&] { return fits(h100_pod("probe", 1), "dra-0"); }));

  // Memory: 80 GiB asked, NVML's 81559 MiB published: the H100 is the 80 GB GPU it is sold as.
  json h100_80 = h100_pod("h100-80", 8);
  h100_80["metadata"]["annotations"]["gpu.nvidia.com/memory"] = "80Gi";
  CHECK(fits(h100_80, "dra-0"));
  h100_80["metadata"]["annotations"]["gpu.nvidia.com/memory"] = "94Gi";  // an H100 NVL's: not this one
  CHECK_FALSE(fits(h100_80, "dra-0"));

  // MIG mode: the 4 whole A100s are free whatever the MIG claims on gpu-4; a fifth GPU is not.
  json a100 = test_support::pending_pod("a100", 4, 0);
  a100["metadata"]["annotations"]["gpu.nvidia.com/model"] = "A100";
  CHECK(fits(a100, "mixed"));
  a100["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "5";
  a100["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "5";
  const json five = filter(a100, {"mixed"});
  INFO(five.dump());
  CHECK(five["FailedNodes"]["mixed"] == "only 4 of 8 GPUs free; pod requests 5");

  // Family as GFD writes it.
  json ada = test_support::pending_pod("ada", 1, 0);
  ada["metadata"]["annotations"]["gpu.nvidia.com/family"] = "ada-lovelace";
  ada["metadata"]["annotations"].erase("gpu.nvidia.com/model");
  CHECK(fits(ada, "ada-0"));
  ada["metadata"]["annotations"]["gpu.nvidia.com/family"] = "hopper";
  CHECK_FALSE(fits(ada, "ada-0"));

  // Admin access: the monitoring claim over all of dra-0's GPUs (listed at start) holds none of them.
  CHECK(fits(h100_pod("eight", 8), "dra-0"));

  // The driver republishes dra-0's pool (generation 2) with gpu-7 tainted after an XID error; the old
  // generation's slice is still listed. 8 GPUs, not 16, and 7 of them usable.
  json republished = h100_slice("dra-0", 8);
  republished["metadata"]["name"] = "dra-0-gpu.nvidia.com-r4t9z";
  republished["spec"]["pool"]["generation"] = 2;
  republished["spec"]["devices"][7]["taints"] = {
      {{"key", "gpu.nvidia.com/xid"}, {"value", "79"}, {"effect", "NoSchedule"}, {"timeAdded", "2026-12-05T10:00:00Z"}}};
  api.put_resource_slice(republished);
  CHECK(test_support::eventually([&] { return !fits(h100_pod("eight", 8), "dra-0"); }));
  CHECK(fits(h100_pod("seven", 7), "dra-0"));
  const auto series = test_support::scrape(p.port());
  CHECK(test_support::value_of(series, "gpu_extender_dra_gpus") == 8 + 8 + 1);
  CHECK(test_support::value_of(series, "gpu_extender_dra_held_gpus") == 1);          // gpu-4 of mixed, once
  CHECK(test_support::value_of(series, "gpu_extender_dra_unavailable_gpus") == 3 + 1);  // mixed's gpu-5..7, dra-0's gpu-7
  // Explain names the tainted GPU and why.
  auto explained = test_support::post(
      p, "/explain", json({{"Pod", h100_pod("eight", 8)}, {"Nodes", nullptr}, {"NodeNames", {"dra-0"}}}).dump());
  REQUIRE(explained);
  const std::string text = explained->body;
  INFO(text);
  CHECK(text.find("dra-0/gpu-7") != std::string::npos);
  CHECK(text.find("gpu.nvidia.com/xid=79:NoSchedule") != std::string::npos);

  // A pod whose claim tolerates the taint may have gpu-7 too.
  api.put_resource_claim_template(json::parse(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"burn-in","namespace":"burst"},)"
      R"("spec":{"spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":8,)"
      R"("tolerations":[{"key":"gpu.nvidia.com/xid","operator":"Exists","effect":"NoSchedule"}]}}]}}}})"));
  json burn_in = h100_pod("burn-in", 0);
  burn_in["spec"]["resourceClaims"] = {{{"name", "gpus"}, {"resourceClaimTemplateName", "burn-in"}}};
  CHECK(test_support::eventually([&] { return fits(burn_in, "dra-0"); }));

  // An admin drains gpu-0 of the L40S node with a DeviceTaintRule (GA in 1.37): no longer free, and free
  // again once the rule is deleted. A rule for another driver's devices changes nothing.
  auto rule = [](const std::string& name, const json& selector) {
    return json{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "DeviceTaintRule"}, {"metadata", {{"name", name}}},
                {"spec", {{"deviceSelector", selector},
                          {"taint", {{"key", "example.com/maintenance"}, {"value", "true"}, {"effect", "NoSchedule"},
                                     {"timeAdded", "2026-12-06T15:00:00Z"}}}}}};
  };
  api.put_device_taint_rule(rule("nic-drain", {{"driver", "nic.example.com"}}));
  api.put_device_taint_rule(rule("drain-ada", {{"driver", "gpu.nvidia.com"}, {"pool", "ada-0"}, {"device", "gpu-0"}}));
  ada["metadata"]["annotations"]["gpu.nvidia.com/family"] = "ada-lovelace";
  CHECK(test_support::eventually([&] { return !fits(ada, "ada-0"); }));
  CHECK(filter(ada, {"ada-0"})["FailedNodes"]["ada-0"].get<std::string>().find("GPUs free") != std::string::npos);
  api.delete_device_taint_rule("drain-ada");
  CHECK(test_support::eventually([&] { return fits(ada, "ada-0"); }));
}
