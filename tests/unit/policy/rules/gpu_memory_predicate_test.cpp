#include <catch2/catch.hpp>

#include "policy/rule_support.h"

using namespace gpu_extender;
using rule_support::check;
using test_support::gpu_node;
using test_support::gpu_pod;

TEST_CASE("gpuMemory: enough memory per GPU passes, equal included") {
  auto p = rules::make_gpu_memory_predicate(rule_support::config());
  CHECK(check(*p, gpu_pod(1, std::nullopt, 40960), gpu_node("n", "A100", "40960", 8)).fit == Fit::kPass);
  CHECK(check(*p, gpu_pod(1, std::nullopt, 40960), gpu_node("n", "A100", "81920", 8)).fit == Fit::kPass);
  CHECK(check(*p, gpu_pod(1, std::nullopt, 40960), gpu_node("n", "A100", "80Gi", 8)).fit == Fit::kPass);
  CHECK(check(*p, gpu_pod(1), gpu_node("n", "T4", "16384", 8)).fit == Fit::kPass);
}

TEST_CASE("gpuMemory: too little memory per GPU is unresolvable") {
  auto p = rules::make_gpu_memory_predicate(rule_support::config());
  const auto r = check(*p, gpu_pod(1, std::nullopt, 40960), gpu_node("n", "T4", "16384", 4));
  CHECK(r.fit == Fit::kUnresolvable);
  CHECK(r.reason == "gpu memory 16384 MiB per GPU is below requested 40960 MiB");
}

TEST_CASE("gpuMemory: a missing or malformed label fails that node, with a reason") {
  auto p = rules::make_gpu_memory_predicate(rule_support::config());
  NodeView n = gpu_node("n", "A100", "lots", 8);
  auto r = check(*p, gpu_pod(1, std::nullopt, 1024), n);
  CHECK(r.fit == Fit::kUnresolvable);
  CHECK(r.reason.find("node label gpu.nvidia.com/memory is not a memory size") == 0);
  n.gpu_memory.reset();
  r = check(*p, gpu_pod(1, std::nullopt, 1024), n);
  CHECK(r.reason ==
        "node has no gpu.nvidia.com/memory, nvidia.com/gpu.memory, karpenter.k8s.aws/instance-gpu-memory or "
        "eks.amazonaws.com/instance-gpu-memory label; pod requests 1024 MiB per GPU");
}
