#include <catch2/catch.hpp>

#include "policy/rule_support.h"

using namespace gpu_extender;
using rule_support::check;
using test_support::used;

namespace {
PodRequest aaa_pod(int64_t units) {
  PodRequest p = test_support::gpu_pod(0);
  p.requests.set(ViewSchema::kPackedResource, units * 1000);
  return p;
}
NodeView aaa_node(int64_t units) {
  NodeView n;
  n.name = "n";
  n.allocatable.set(ViewSchema::kPackedResource, units * 1000);
  return n;
}
}  // namespace

TEST_CASE("packedResourceFit: free aaa is allocatable minus what is in use") {
  auto p = rules::make_packed_resource_fit_predicate(rule_support::config());
  CHECK(check(*p, aaa_pod(1), aaa_node(5), used(ViewSchema::kPackedResource, 4)).fit == Fit::kPass);
  const auto r = check(*p, aaa_pod(2), aaa_node(5), used(ViewSchema::kPackedResource, 4));
  CHECK(r.fit == Fit::kResolvable);
  CHECK(r.reason == "only 1 of 5 custom.resource/aaa free; pod requests 2");
  CHECK(check(*p, aaa_pod(5), aaa_node(5)).fit == Fit::kPass);  // usage unknown: capacity only
}

TEST_CASE("packedResourceFit: no aaa, or too little in total, is unresolvable") {
  auto p = rules::make_packed_resource_fit_predicate(rule_support::config());
  NodeView none;
  none.name = "none";
  CHECK(check(*p, aaa_pod(1), none).reason == "node offers no custom.resource/aaa; pod requests 1");
  const auto r = check(*p, aaa_pod(6), aaa_node(5));
  CHECK(r.fit == Fit::kUnresolvable);
  CHECK(r.reason == "node has 5 custom.resource/aaa; pod requests 6");
  CHECK(check(*p, test_support::gpu_pod(1), none).fit == Fit::kPass);  // pod without aaa
}
