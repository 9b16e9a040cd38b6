#include <catch2/catch.hpp>

#include "policy/rule_support.h"

using namespace gpu_extender;
using rule_support::check;
using test_support::gpu_node;
using test_support::gpu_pod;
using test_support::used;

TEST_CASE("gpuCount: enough GPUs pass, pods without GPUs always pass") {
  auto p = rules::make_gpu_count_predicate(rule_support::config());
  CHECK(check(*p, gpu_pod(2), gpu_node("n", "A100", "40960", 2)).fit == Fit::kPass);
  NodeView cpu;
  cpu.name = "cpu";
  CHECK(check(*p, gpu_pod(0), cpu).fit == Fit::kPass);
}

TEST_CASE("gpuCount: more GPUs than the node has is unresolvable") {
  auto p = rules::make_gpu_count_predicate(rule_support::config());
  const auto r = check(*p, gpu_pod(8), gpu_node("n", "A100", "40960", 4));
  CHECK(r.fit == Fit::kUnresolvable);
  CHECK(r.reason == "node has 4 GPUs; pod requests 8");
  NodeView cpu;
  cpu.name = "cpu";
  CHECK(check(*p, gpu_pod(1), cpu).reason == "node offers no nvidia.com/gpu; pod requests 1");
}

TEST_CASE("gpuCount: GPUs busy right now is resolvable (preemption could free them)") {
  auto p = rules::make_gpu_count_predicate(rule_support::config());
  const NodeView n = gpu_node("n", "A100", "40960", 8);
  const auto r = check(*p, gpu_pod(2), n, used(ViewSchema::kGpuResource, 7));
  CHECK(r.fit == Fit::kResolvable);
  CHECK(r.reason == "only 1 of 8 GPUs free; pod requests 2");
  CHECK(check(*p, gpu_pod(2), n, used(ViewSchema::kGpuResource, 6)).fit == Fit::kPass);
  CHECK(check(*p, gpu_pod(2), n, ResourceAmounts{}).fit == Fit::kPass);
}

TEST_CASE("gpuCount: the count label stands in when the node reports no GPU resource") {
  auto p = rules::make_gpu_count_predicate(rule_support::config());
  NodeView n;
  n.name = "n";
  n.gpu_count = "4";
  CHECK(check(*p, gpu_pod(4), n).fit == Fit::kPass);
  CHECK(check(*p, gpu_pod(5), n).fit == Fit::kUnresolvable);
  n.allocatable.set(ViewSchema::kGpuResource, 2000);  // the device plugin's word wins over the label
  CHECK(check(*p, gpu_pod(4), n).fit == Fit::kUnresolvable);
}
