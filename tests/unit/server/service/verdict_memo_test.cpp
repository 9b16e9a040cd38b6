// Names mode keeps each node's verdict between requests (VerdictMemo) and judges a node again only
// when it, the pod's facts or the policy changed. These cases change one of them at a time and check
// the answer against what a fresh judgement gives.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <map>

#include "gpu_extender/server/extender_service.h"
#include "names_mode_support.h"
#include "state/cluster_view_writes.h"

using namespace gpu_extender;
using names_mode_support::names_body;
using names_mode_support::two_node_cluster;

namespace {

// Per node name: "pass", or the map it failed into with its reason.
std::map<std::string, std::string> verdicts(const ExtenderService& service, const std::string& body) {
  VerbSummary summary;
  const Reply reply = service.handle(Verb::kFilter, body, summary);
  REQUIRE(reply.status == 200);
  const auto answer = nlohmann::json::parse(reply.body);
  std::map<std::string, std::string> out;
  for (const auto& name : answer["NodeNames"]) out[name.get<std::string>()] = "pass";
  for (const auto& [name, reason] : answer["FailedNodes"].items()) out[name] = "failed: " + reason.get<std::string>();
  for (const auto& [name, reason] : answer["FailedAndUnresolvableNodes"].items())
    out[name] = "unresolvable: " + reason.get<std::string>();
  return out;
}

}  // namespace

TEST_CASE("verdict memo: a node bound to in between is judged again, the others keep their verdict") {
  auto policy = Policy::build(default_policy_config());
  auto view = two_node_cluster(policy->schema());
  const ExtenderService service(ServiceParts{policy, nullptr, view, nullptr});
  auto first = verdicts(service, names_body("a", 1));
  CHECK(first["small"] == "pass");
  CHECK(first["large"] == "pass");
  CHECK(first["unknown"].find("not in the extender's node cache") != std::string::npos);

  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  view->count_in_flight(test_write(), "small", one, true);  // pod a's /bind (the ledger counts it)
  auto second = verdicts(service, names_body("b", 1));
  CHECK(second["small"] == "failed: only 0 of 1 GPUs free; pod requests 1");
  CHECK(second["large"] == "pass");
  view->count_in_flight(test_write(), "small", one, false);  // the bind failed
  CHECK(verdicts(service, names_body("c", 1))["small"] == "pass");
}

TEST_CASE("verdict memo: a pod asking for something else is judged afresh, and the first again after it") {
  auto policy = Policy::build(default_policy_config());
  auto view = two_node_cluster(policy->schema());
  const ExtenderService service(ServiceParts{policy, nullptr, view, nullptr});
  CHECK(verdicts(service, names_body("a", 1))["small"] == "pass");
  CHECK(verdicts(service, names_body("b", 2))["small"] == "unresolvable: node has 1 GPUs; pod requests 2");
  auto t4 = verdicts(service, names_body("c", 1, R"({"gpu.nvidia.com/model":"T4"})"));
  CHECK(t4["large"] == "unresolvable: gpu model A100 does not match requested T4");
  auto memory = verdicts(service, names_body("d", 1, R"({"gpu.nvidia.com/memory":"81920"})"));
  CHECK(memory["large"].rfind("unresolvable: ", 0) == 0);
  auto family = verdicts(service, names_body("e", 1, R"({"gpu.nvidia.com/family":"hopper"})"));
  CHECK(family["large"].rfind("unresolvable: node has no ", 0) == 0);
  auto invalid = verdicts(service, names_body("f", 1, R"({"gpu.nvidia.com/memory":"lots"})"));
  CHECK(invalid["large"].rfind("unresolvable: ", 0) == 0);
  CHECK(invalid["large"] != memory["large"]);
  auto again = verdicts(service, names_body("g", 1));
  CHECK(again["small"] == "pass");
  CHECK(again["large"] == "pass");
}

TEST_CASE("verdict memo: pod facts differ in every field a predicate reads") {
  PodRequest base;
  base.requests.set(ViewSchema::kGpuResource, 1000);
  const PodFacts facts = base.facts();
  CHECK(facts == base.facts());
  PodRequest other = base;
  other.name = "another-replica";  // identity is not a fact
  other.uid = "u2";
  CHECK(facts == other.facts());
  auto differs = [&](auto change) {
    PodRequest p = base;
    change(p);
    return !(facts == p.facts());
  };
  CHECK(differs([](PodRequest& p) { p.requests.set(ViewSchema::kGpuResource, 2000); }));
  CHECK(differs([](PodRequest& p) { p.requests.set(ViewSchema::kPackedResource, 0); }));  // listed, even as 0
  CHECK(differs([](PodRequest& p) { p.gpu_model = "A100"; }));
  CHECK(differs([](PodRequest& p) { p.gpu_model = ""; }));
  CHECK(differs([](PodRequest& p) { p.gpu_family = "ampere"; }));
  CHECK(differs([](PodRequest& p) { p.gpu_memory_mib = 1024; }));
  CHECK(differs([](PodRequest& p) { p.invalid_reason = "bad annotation"; }));
}

TEST_CASE("verdict memo: a reloaded policy judges every node again") {
  auto policy = Policy::build(default_policy_config());
  auto view = two_node_cluster(policy->schema());
  const ExtenderService service(ServiceParts{policy, nullptr, view, nullptr});
  CHECK(verdicts(service, names_body("a", 2))["small"] == "unresolvable: node has 1 GPUs; pod requests 2");
  PolicyConfig without_count = default_policy_config();
  std::erase(without_count.filters, "gpuCount");
  REQUIRE(service.replace_policy(Policy::build(without_count)).ok());
  CHECK(verdicts(service, names_body("b", 2))["small"] == "pass");
}

