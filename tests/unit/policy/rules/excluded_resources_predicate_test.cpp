#include <catch2/catch.hpp>

#include "policy/rule_support.h"

using namespace gpu_extender;
using rule_support::check;

TEST_CASE("excludedResources: a node offering bbb is never chosen") {
  auto p = rules::make_excluded_resources_predicate(rule_support::config());
  NodeView n;
  n.name = "worker2";
  CHECK(check(*p, test_support::gpu_pod(0), n).fit == Fit::kPass);
  n.capacity.set(ViewSchema::kFirstExcludedResource, 1000);
  const auto r = check(*p, test_support::gpu_pod(0), n);
  CHECK(r.fit == Fit::kUnresolvable);
  CHECK(r.reason == "node offers custom.resource/bbb (1), which the policy excludes");
}

TEST_CASE("excludedResources: zero bbb is not offering it, a pod asking for bbb is exempt") {
  auto p = rules::make_excluded_resources_predicate(rule_support::config());
  NodeView n;
  n.name = "n";
  n.allocatable.set(ViewSchema::kFirstExcludedResource, 0);
  CHECK(check(*p, test_support::gpu_pod(0), n).fit == Fit::kPass);
  n.allocatable.set(ViewSchema::kFirstExcludedResource, 2000);
  PodRequest wants_bbb = test_support::gpu_pod(0);
  wants_bbb.requests.set(ViewSchema::kFirstExcludedResource, 1000);
  CHECK(check(*p, wants_bbb, n).fit == Fit::kPass);
}
