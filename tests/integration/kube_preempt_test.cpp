// /preempt through a fake API server over TLS with a bearer token: candidates kept that pass once their
// victims are gone, answered by UID; a preemptor's next /filter waits for its victims' deletions to
// reach the watch, other pods' do not; without API access, /preempt and names mode say so.
#include <catch2/catch.hpp>

#include <thread>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "kube_support.h"

using nlohmann::json;
using test_support::eventually;
using test_support::ExtenderProcess;
using test_support::make_pod;
using namespace kube_support;

TEST_CASE("kube: /preempt keeps candidates that pass after eviction, answers UIDs") {
  Cluster c;
  ExtenderProcess p(c.args());
  REQUIRE(eventually([&] { return ready(p); }));
  const json pod = gpu_pod("urgent", "uid-urgent", 4);
  const json victim = make_pod("ml", "busy", "uid-busy", "a100-8", 6);
  const json meta = {{"Pod", pod},
                     {"NodeNameToVictims", nullptr},
                     {"NodeNameToMetaVictims",
                      {{"a100-8", {{"Pods", {{{"UID", "uid-busy"}}}}, {"NumPDBViolations", 1}}},
                       {"t4-4", {{"Pods", {{{"UID", "uid-x"}}}}, {"NumPDBViolations", 0}}},
                       {"a100-4", {{"Pods", json::array()}, {"NumPDBViolations", 0}}}}}};
  json result = post_json(p, "/preempt", meta);
  CHECK(result == json({{"NodeNameToMetaVictims", {{"a100-8", {{"Pods", {{{"UID", "uid-busy"}}}}, {"NumPDBViolations", 1}}}}}}));

  const json full = {{"Pod", pod},
                     {"NodeNameToVictims", {{"a100-8", {{"Pods", {victim}}, {"NumPDBViolations", 0}}},
                                            {"bbb-node", {{"Pods", {make_pod("ml", "v2", "uid-v2", "bbb-node", 1)}}, {"NumPDBViolations", 0}}}}},
                     {"NodeNameToMetaVictims", nullptr}};
  result = post_json(p, "/preempt", full);
  CHECK(result == json({{"NodeNameToMetaVictims", {{"a100-8", {{"Pods", {{{"UID", "uid-busy"}}}}, {"NumPDBViolations", 0}}}}}}));

  // A victim the view does not know frees nothing: a100-8 still has only 2 free GPUs.
  const json unknown = {{"Pod", pod}, {"NodeNameToMetaVictims", {{"a100-8", {{"Pods", {{{"UID", "uid-nobody"}}}}, {"NumPDBViolations", 0}}}}}};
  CHECK(post_json(p, "/preempt", unknown)["NodeNameToMetaVictims"] == json::object());
  // A group member: the extender preempts for its whole group itself, so no candidate is kept, not even a100-8.
  json member = pod;
  member["metadata"]["annotations"]["gpu.nvidia.com/group"] = "trainer";
  member["metadata"]["annotations"]["gpu.nvidia.com/group-size"] = "2";
  json for_member = meta;
  for_member["Pod"] = member;
  CHECK(post_json(p, "/preempt", for_member) == json({{"NodeNameToMetaVictims", json::object()}}));
  int status = 0;
  CHECK(post_json(p, "/preempt", {{"Pod", pod}}, &status)["Error"] ==
        "NodeNameToVictims: neither NodeNameToVictims nor NodeNameToMetaVictims is given");
  CHECK(status == 400);
}

TEST_CASE("kube: a preemptor's /filter waits for its victims' deletions to reach the watch, other pods do not") {
  Cluster c;
  ExtenderProcess p(c.args());
  REQUIRE(eventually([&] { return ready(p); }));
  // a100-8 has 2 of its 8 GPUs free (busy holds 6): a 4-GPU pod fits only once busy goes.
  const json urgent = gpu_pod("urgent", "uid-urgent", 4);
  json one_node = c.names_args(urgent);
  one_node["NodeNames"] = json::array({"a100-8"});
  CHECK(post_json(p, "/filter", one_node)["NodeNames"].empty());
  const json meta = {{"Pod", urgent},
                     {"NodeNameToMetaVictims", {{"a100-8", {{"Pods", {{{"UID", "uid-busy"}}}}, {"NumPDBViolations", 0}}}}}};
  REQUIRE(post_json(p, "/preempt", meta)["NodeNameToMetaVictims"].contains("a100-8"));
  // The scheduler deletes the victim and retries at once; the deletion reaches the API server (and the
  // watch) 300 ms later, past the 20 ms any pod may wait, within the preemptor's longer wait (1 s). The
  // delay is the case under test, not a stand-in for an event: the deletion has to land while the
  // /filter is already waiting, and nothing the extender shows marks a /filter in its wait to key it on.
  std::thread deleter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.api.delete_pod("ml", "busy");
  });
  const json answer = post_json(p, "/filter", one_node);
  deleter.join();
  INFO(answer.dump());
  CHECK(answer["NodeNames"] == json::array({"a100-8"}));
  // Another pod that did not preempt is judged on what the view has, without waiting for anything.
  c.api.put_pod(make_pod("ml", "busy-again", "uid-busy-again", "a100-8", 6));
  REQUIRE(eventually([&] { return post_json(p, "/filter", one_node)["NodeNames"].empty(); }));
  json other = c.names_args(gpu_pod("patient", "uid-patient", 4));
  other["NodeNames"] = json::array({"a100-8"});
  // A fixed delay, on purpose: what is checked is a wait that does NOT happen. Had this /filter waited as
  // the preemptor's did, the deletion 300 ms later would have let it pass.
  std::thread late_deleter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.api.delete_pod("ml", "busy-again");
  });
  const json refused = post_json(p, "/filter", other);
  late_deleter.join();
  CHECK(refused["NodeNames"].empty());
}

TEST_CASE("kube: without API access /preempt and names mode say so") {
  ExtenderProcess p;
  CHECK(post_json(p, "/preempt", {{"Pod", gpu_pod("x", "u", 1)}, {"NodeNameToMetaVictims", json::object()}})["Error"]
            .get<std::string>()
            .find("which need Kubernetes API access") != std::string::npos);
  CHECK(p.logged("no Kubernetes API configured"));
}
