// DRA nodes through the watch: a node that publishes its GPUs as ResourceSlices of NVIDIA's driver (no GPU
// labels, no nvidia.com/gpu allocatable, as with DRA extended resources) is judged on them; pods bound
// there asking nvidia.com/gpu count against them; a slice deleted takes the GPUs away. Allocated
// ResourceClaims hold their devices: counted once however many claims share one, and in place of the
// request of the pod they serve. An API server that serves no DRA (404, before 1.34) is the fake's
// default, which every other test runs with.
#include <catch2/catch.hpp>

#include <set>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "http_support.h"
#include "metrics_support.h"
#include "scheduler_driver.h"

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;

namespace {

// A GPU not in MIG mode as NVIDIA's DRA driver publishes it (cmd/gpu-kubelet-plugin/deviceinfo.go):
// "gpu-<minor>", memory as NVML reports it (an H100 80GB: 81559Mi), no "index" attribute.
json whole_gpu(const std::string& node, int minor, const std::string& product = "NVIDIA H100 80GB HBM3",
               const std::string& architecture = "Hopper", const std::string& memory = "81559Mi") {
  return {{"name", "gpu-" + std::to_string(minor)},
          {"attributes",
           {{"type", {{"string", "gpu"}}},
            {"uuid", {{"string", "GPU-" + node + "-" + std::to_string(minor)}}},
            {"productName", {{"string", product}}},
            {"brand", {{"string", "Nvidia"}}},
            {"architecture", {{"string", architecture}}},
            {"cudaComputeCapability", {{"version", "9.0.0"}}},
            {"driverVersion", {{"version", "580.95.5"}}},
            {"cudaDriverVersion", {{"version", "13.0.0"}}},
            {"resource.kubernetes.io/pciBusID", {{"string", "0000:" + std::to_string(10 + minor) + ":00.0"}}}}},
          {"capacity", {{"memory", {{"value", memory}}}}}};
}

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

json slice_of(const std::string& node, const json& devices, int generation = 1, const std::string& suffix = "x7k2p") {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", node + "-gpu.nvidia.com-" + suffix}}},
          {"spec",
           {{"driver", "gpu.nvidia.com"},
            {"pool", {{"name", node}, {"generation", generation}, {"resourceSliceCount", 1}}},
            {"nodeName", node},
            {"devices", devices}}}};
}

// A slice of `node` with `gpus` H100s as the driver publishes it.
json h100_slice(const std::string& node, int gpus) {
  json devices = json::array();
  for (int i = 0; i < gpus; ++i) devices.push_back(whole_gpu(node, i));
  return slice_of(node, devices);
}

// A claim as the scheduler leaves it after allocating `devices` of dra-0 (PreBind): the allocation's
// results and node selector, reserved for pod `pod_uid`. Extended-resource claims are owned by their pod
// and annotated so.
json allocated_claim(const std::string& name, const std::vector<std::string>& devices, const std::string& pod_uid,
                     bool extended_resource = false, const std::string& share_id = "") {
  json results = json::array();
  for (const std::string& d : devices) {
    json r = {{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "dra-0"}, {"device", d}};
    if (!share_id.empty()) r["shareID"] = share_id;
    results.push_back(r);
  }
  json metadata = {{"name", name}, {"namespace", "burst"}, {"uid", "claim-uid-" + name}};
  if (extended_resource) {
    metadata["annotations"] = {{"resource.kubernetes.io/extended-resource-claim", "true"}};
    metadata["ownerReferences"] = {{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "owner"}, {"uid", pod_uid},
                                    {"controller", true}}};
  }
  json selector = {{"nodeSelectorTerms",
                    {{{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"dra-0"}}}}}}}}};
  json status = {{"allocation", {{"devices", {{"results", results}}}, {"nodeSelector", selector}}}};
  if (!extended_resource) status["reservedFor"] = {{{"resource", "pods"}, {"name", "owner"}, {"uid", pod_uid}}};
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", metadata},
          {"spec", {{"devices", {{"requests", {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}}}}}}}},
          {"status", status}};
}

json h100_pod(const std::string& name, int gpus) {
  json pod = test_support::pending_pod(name, gpus, 0);
  pod["metadata"]["annotations"]["gpu.nvidia.com/model"] = "H100";
  return pod;
}

json names_filter(ExtenderProcess& p, const json& pod) {
  const json body = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"dra-0", "plain-0"}}};
  auto res = test_support::post(p, "/filter", body.dump());
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return json::parse(res->body);
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

TEST_CASE("DRA: devices held by allocated claims count as used, once each, in place of the requests they serve") {
  FakeApiServer api;
  api.put_node(test_support::make_node("dra-0", "", 0));
  api.put_node(test_support::make_node("plain-0", "", 0));
  api.put_resource_slice(h100_slice("dra-0", 8));
  // A pod asking through its claim alone (no nvidia.com/gpu), bound on dra-0 and holding gpu-0..3.
  api.put_pod(test_support::make_pod("burst", "trainer", "uid-trainer", "dra-0", 0));
  api.put_resource_claim(allocated_claim("trainer-gpus", {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, "uid-trainer"));
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));
  auto fits = [&](int gpus) { return names_filter(p, h100_pod("probe", gpus))["NodeNames"] == json::array({"dra-0"}); };

  REQUIRE(test_support::eventually([&] { return fits(4) && !fits(5); }));
  // A second claim shares gpu-3 (shareID) and takes gpu-4: five GPUs held, not six.
  api.put_resource_claim(allocated_claim("shared", {"gpu-3", "gpu-4"}, "uid-trainer", false, "a1b2"));
  CHECK(test_support::eventually([&] { return fits(3) && !fits(4); }));
  // A DRA extended-resource pod: its nvidia.com/gpu: 2 is served by the claim the scheduler made for it,
  // so it counts two GPUs, not four (its request and its claim's devices).
  api.put_pod(test_support::make_pod("burst", "ext", "uid-ext", "dra-0", 2));
  CHECK(test_support::eventually([&] { return fits(1) && !fits(2); }));  // the request counts until its claim shows
  api.put_resource_claim(allocated_claim("ext-gpu-abcde", {"gpu-5", "gpu-6"}, "uid-ext", true));
  CHECK(test_support::eventually([&] { return fits(1) && !fits(2); }));  // 3 held + 2 claimed + 2 = 7: still one free
  api.put_resource_claim(allocated_claim("ext-gpu-abcde", {"gpu-5"}, "uid-ext", true));  // reallocated smaller
  CHECK(test_support::eventually([&] { return fits(2) && !fits(3); }));
  // Explain says where the facts came from and which claim holds which GPU; the metrics count them.
  auto explained = test_support::post(
      p, "/explain", json({{"Pod", h100_pod("probe", 1)}, {"Nodes", nullptr}, {"NodeNames", {"dra-0"}}}).dump());
  REQUIRE(explained);
  const json facts = json::parse(explained->body)["nodes"][0]["facts"];
  INFO(facts.dump());
  CHECK(facts["gpuCount"]["label"] == "resourceslices of gpu.nvidia.com");
  CHECK(facts["draHeldGpus"]["value"].get<std::string>().find("dra-0/gpu-5 by burst/ext-gpu-abcde") != std::string::npos);
  const auto series = test_support::scrape(p.port());
  CHECK(test_support::value_of(series, "gpu_extender_dra_nodes") == 1);
  CHECK(test_support::value_of(series, "gpu_extender_dra_gpus") == 8);
  CHECK(test_support::value_of(series, "gpu_extender_dra_claims") == 3);
  CHECK(test_support::value_of(series, "gpu_extender_dra_held_gpus") == 6);
  // The trainer's claim is deleted (the pod finished): gpu-0..2 are free again, gpu-3 stays shared.
  api.delete_resource_claim("burst/trainer-gpus");
  CHECK(test_support::eventually([&] { return fits(5) && !fits(6); }));
  // A claim deallocated (status.allocation gone) holds nothing.
  json freed = allocated_claim("shared", {}, "uid-trainer");
  freed["status"].erase("allocation");
  api.put_resource_claim(freed);
  CHECK(test_support::eventually([&] { return fits(7) && !fits(8); }));
}

TEST_CASE("DRA: a claim deallocated while the extender is down is free when it comes back, and a malformed slice is said") {
  FakeApiServer api;
  api.put_node(test_support::make_node("dra-0", "", 0));
  api.put_node(test_support::make_node("plain-0", "", 0));
  api.put_resource_slice(h100_slice("dra-0", 8));
  api.put_resource_claim(allocated_claim("held", {"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5"}, "uid-gone"));
  auto fits = [&](ExtenderProcess& p, int gpus) {
    return names_filter(p, h100_pod("probe", gpus))["NodeNames"] == json::array({"dra-0"});
  };
  {
    ExtenderProcess p(api.extender_args());
    REQUIRE(test_support::becomes_ready(p));
    REQUIRE(test_support::eventually([&] { return fits(p, 2) && !fits(p, 3); }));
  }
  // While it is down: the claim's pod is gone and the resourceclaim controller deallocates it; a second
  // node's slice publishes a memory no one can read.
  json freed = allocated_claim("held", {}, "uid-gone");
  freed["status"].erase("allocation");
  freed["status"].erase("reservedFor");
  api.put_resource_claim(freed);
  api.put_node(test_support::make_node("dra-1", "", 0));
  json odd = h100_slice("dra-1", 2);
  odd["spec"]["devices"][0]["capacity"]["memory"]["value"] = "lots";
  api.put_resource_slice(odd);
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));
  CHECK(test_support::eventually([&] { return fits(p, 8); }));
  // The slice's other facts still count (2 GPUs, an H100), its memory does not: the node has no memory fact.
  const auto series = test_support::scrape(p.port());
  CHECK(test_support::value_of(series, "gpu_extender_watch_objects_not_understood_total{resource=\"resourceslices\"}") == 1);
  CHECK(test_support::value_of(series, "gpu_extender_dra_gpus") == 10);
  CHECK(test_support::value_of(series, "gpu_extender_dra_held_gpus") == 0);
  CHECK(test_support::eventually(
      [&] { return p.log().find("resourceslice dra-1-gpu.nvidia.com-x7k2p: device gpu-0: capacity memory") != std::string::npos; }));
}

TEST_CASE("DRA: a pod asking GPUs through its claim template is judged on the template's count") {
  FakeApiServer api;
  api.put_node(test_support::make_node("dra-0", "", 0));
  api.put_node(test_support::make_node("plain-0", "", 0));
  api.put_resource_slice(h100_slice("dra-0", 8));
  api.put_resource_claim(allocated_claim("held", {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, "uid-other"));  // 4 free
  auto template_of = [](const std::string& name, int gpus) {
    return json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":")" + name +
                       R"(","namespace":"burst"},"spec":{"spec":{"devices":{"requests":[{"name":"gpus","exactly":)"
                       R"({"deviceClassName":"gpu.nvidia.com","count":)" + std::to_string(gpus) + "}}]}}}}");
  };
  api.put_resource_claim_template(template_of("four", 4));
  api.put_resource_claim_template(template_of("six", 6));
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));
  auto by_claim = [](const std::string& name, const std::string& claim_template) {
    json pod = h100_pod(name, 0);  // no nvidia.com/gpu: its GPUs are in its claim
    pod["spec"]["resourceClaims"] = {{{"name", "gpus"}, {"resourceClaimTemplateName", claim_template}}};
    return pod;
  };
  REQUIRE(test_support::eventually([&] { return names_filter(p, by_claim("w4", "four"))["NodeNames"] == json::array({"dra-0"}); }));
  const json six = names_filter(p, by_claim("w6", "six"));
  INFO(six.dump());
  CHECK(six["NodeNames"].empty());
  CHECK(six["FailedNodes"]["dra-0"].get<std::string>().find("pod requests 6") != std::string::npos);
  // A template the view does not know asks nothing the extender can count: judged on its annotations
  // alone (the H100 node passes, full as it is; the scheduler's own DRA plugin judges the claim).
  CHECK(names_filter(p, by_claim("w?", "missing"))["NodeNames"] == json::array({"dra-0"}));
}

TEST_CASE("DRA: /preempt judges a pod asking GPUs through its claim template as /filter does") {
  FakeApiServer api;
  api.put_node(test_support::make_node("dra-0", "", 0));
  api.put_resource_slice(h100_slice("dra-0", 8));
  api.put_resource_claim(allocated_claim("held", {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, "uid-other"));  // 4 free
  api.put_resource_claim_template(json::parse(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"six","namespace":"burst"},)"
      R"("spec":{"spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":6}}]}}}})"));
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));
  json six = h100_pod("w6", 0);  // no nvidia.com/gpu: its 6 GPUs are in its claim
  six["spec"]["resourceClaims"] = {{{"name", "gpus"}, {"resourceClaimTemplateName", "six"}}};
  REQUIRE(test_support::eventually([&] {
    return names_filter(p, six)["FailedNodes"].value("dra-0", "").find("pod requests 6") != std::string::npos;
  }));
  // A victim the extender does not know frees nothing it can count: with 4 of 8 free, the node is no
  // candidate for a pod asking 6, at /preempt as at /filter (judged as asking none, it was kept).
  const json args = {{"Pod", six},
                     {"NodeNameToMetaVictims", {{"dra-0", {{"Pods", {{{"UID", "uid-unknown"}}}}, {"NumPDBViolations", 0}}}}}};
  auto res = test_support::post(p, "/preempt", args.dump());
  REQUIRE(res);
  REQUIRE(res->status == 200);
  INFO(res->body);
  CHECK(json::parse(res->body)["NodeNameToMetaVictims"] == json::object());
}

TEST_CASE("DRA: a pod bound through its claim holds its GPUs before the claim's allocation shows, and once") {
  FakeApiServer api;
  api.put_node(test_support::make_node("dra-0", "", 0));
  api.put_node(test_support::make_node("plain-0", "", 0));
  api.put_resource_slice(h100_slice("dra-0", 8));
  api.put_resource_claim_template(json::parse(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"four","namespace":"burst"},)"
      R"("spec":{"spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":4}}]}}}})"));
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));
  auto fits = [&](int gpus) { return names_filter(p, h100_pod("probe", gpus))["NodeNames"] == json::array({"dra-0"}); };
  REQUIRE(test_support::eventually([&] { return fits(8); }));
  // The pod shows bound, its claim's allocation not yet (the two come on different watches).
  json worker = test_support::make_pod("burst", "worker", "uid-worker", "dra-0", 0);
  worker["spec"]["resourceClaims"] = {{{"name", "gpus"}, {"resourceClaimTemplateName", "four"}}};
  api.put_pod(worker);
  CHECK(test_support::eventually([&] { return fits(4) && !fits(5); }));
  // The claim made from the template shows, allocated and reserved for it: still four, not eight.
  api.put_resource_claim(allocated_claim("worker-gpus-x1", {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, "uid-worker"));
  REQUIRE(test_support::eventually(
      [&] { return test_support::value_of(test_support::scrape(p.port()), "gpu_extender_dra_held_gpus") == 4; }));
  CHECK((fits(4) && !fits(5)));
}

TEST_CASE("DRA: at start, a bound pod counts its claim template's GPUs though templates are listed slowly") {
  FakeApiServer api;
  api.put_node(test_support::make_node("dra-0", "", 0));
  api.put_resource_slice(h100_slice("dra-0", 8));
  api.put_resource_claim_template(json::parse(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"six","namespace":"burst"},)"
      R"("spec":{"spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":6}}]}}}})"));
  // Bound before the extender starts; its claim's allocation has not shown yet.
  json worker = test_support::make_pod("burst", "worker", "uid-worker", "dra-0", 0);
  worker["spec"]["resourceClaims"] = {{{"name", "gpus"}, {"resourceClaimTemplateName", "six"}}};
  api.put_pod(worker);
  api.delay_lists(std::chrono::milliseconds(700), "resourceclaimtemplates");
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));
  auto fits = [&](int gpus) { return names_filter(p, h100_pod("probe", gpus))["NodeNames"] == json::array({"dra-0"}); };
  REQUIRE(test_support::eventually([&] { return fits(2); }));
  CHECK_FALSE(fits(3));  // the pods were listed after the template, so the worker holds 6
  CHECK(api.list_requests("pods") == 1);
}

TEST_CASE("DRA: on labelled nodes, GPUs held by claims make a node fuller for /prioritize, and full for /filter") {
  FakeApiServer api;
  api.put_node(test_support::make_node("lab-0", "A100", 8));  // GPU labels and allocatable, as today
  api.put_node(test_support::make_node("lab-1", "A100", 8));
  // DRA claims hold GPUs of lab-0 (a DRA driver beside the device plugin); no slices are needed to count them.
  json claim = allocated_claim("four", {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, "uid-x");
  for (auto& r : claim["status"]["allocation"]["devices"]["results"]) r["pool"] = "lab-0";
  claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = {"lab-0"};
  api.put_resource_claim(claim);
  ExtenderProcess p(api.extender_args());
  REQUIRE(test_support::becomes_ready(p));
  const json pod = test_support::pending_pod("two", 2, 0);
  const json body = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"lab-0", "lab-1"}}};
  auto score_of = [](const json& scores, const std::string& node) {
    for (const auto& s : scores)
      if (s["Host"] == node) return s["Score"].get<int>();
    return -1;
  };
  // Packing: the node whose GPUs claims half hold ranks above the idle one.
  REQUIRE(test_support::eventually([&] {
    auto res = test_support::post(p, "/prioritize", body.dump());
    const json scores = json::parse(res->body);
    return score_of(scores, "lab-0") > score_of(scores, "lab-1");
  }));
  // Claims hold the other four too: lab-0 is full.
  json rest = allocated_claim("rest", {"gpu-4", "gpu-5", "gpu-6", "gpu-7"}, "uid-y");
  for (auto& r : rest["status"]["allocation"]["devices"]["results"]) r["pool"] = "lab-0";
  rest["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = {"lab-0"};
  api.put_resource_claim(rest);
  CHECK(test_support::eventually([&] {
    auto res = test_support::post(p, "/filter", body.dump());
    return json::parse(res->body)["NodeNames"] == json::array({"lab-1"});
  }));
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
