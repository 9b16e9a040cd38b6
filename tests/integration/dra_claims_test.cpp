// Allocated ResourceClaims through the watch: the devices they hold count as used on their node, once
// each however many claims share one, and in place of the request of the pod they serve; a claim
// deallocated while the extender was down is free when it comes back (and a malformed slice is said); a
// pod asking GPUs through its claim template is judged (by /filter and /preempt) on the template's
// count, holds them from its bind on, before its claim's allocation shows, and counts them at start
// though templates are listed slowly; on labelled nodes, claims make a node fuller for /prioritize.
#include <catch2/catch.hpp>

#include "../unit/test_support.h"
#include "dra_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "http_support.h"
#include "metrics_support.h"

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;
using namespace dra_support;

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
    return 0;  // left out of the answer: 0, as the scheduler reads it
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

