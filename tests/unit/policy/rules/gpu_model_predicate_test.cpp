#include <catch2/catch.hpp>

#include "policy/rule_support.h"

using namespace gpu_extender;
using rule_support::check;
using test_support::gpu_node;
using test_support::gpu_pod;

TEST_CASE("gpuModel: passes a matching model, case-insensitively, and from a list") {
  auto p = rules::make_gpu_model_predicate(rule_support::config());
  const NodeView a100 = gpu_node("n", "A100", "40960", 8);
  CHECK(check(*p, gpu_pod(1, "A100"), a100).fit == Fit::kPass);
  CHECK(check(*p, gpu_pod(1, "a100"), a100).fit == Fit::kPass);
  CHECK(check(*p, gpu_pod(1, "H100, A100"), a100).fit == Fit::kPass);
  CHECK(check(*p, gpu_pod(1), a100).fit == Fit::kPass);  // no annotation: any model
}

TEST_CASE("gpuModel: a different model is unresolvable, with both models in the reason") {
  auto p = rules::make_gpu_model_predicate(rule_support::config());
  const auto r = check(*p, gpu_pod(2, "A100"), gpu_node("n", "T4", "16384", 4));
  CHECK(r.fit == Fit::kUnresolvable);
  CHECK(r.reason == "gpu model T4 does not match requested A100");
  CHECK(check(*p, gpu_pod(1, "A100,H100"), gpu_node("n", "A10", "24576", 1)).fit == Fit::kUnresolvable);
}

TEST_CASE("gpuModel: a node without the label fails when the pod names a model") {
  auto p = rules::make_gpu_model_predicate(rule_support::config());
  NodeView cpu;
  cpu.name = "cpu";
  const auto r = check(*p, gpu_pod(1, "A100"), cpu);
  CHECK(r.fit == Fit::kUnresolvable);
  CHECK(r.reason ==
        "node has no gpu.nvidia.com/model, nvidia.com/gpu.product, karpenter.k8s.aws/instance-gpu-name, "
        "eks.amazonaws.com/instance-gpu-name or cloud.google.com/gke-accelerator label; pod requests gpu model A100");
}

TEST_CASE("gpuModel: GPU Feature Discovery product names match by whole dash-separated tokens, in order") {
  auto p = rules::make_gpu_model_predicate(rule_support::config());
  auto fit = [&](const char* wanted, const char* product) {
    return check(*p, gpu_pod(1, wanted), gpu_node("n", product, "81920", 8)).fit;
  };
  CHECK(fit("A100", "NVIDIA-A100-SXM4-80GB") == Fit::kPass);
  CHECK(fit("A100", "NVIDIA-A100-PCIE-40GB") == Fit::kPass);
  CHECK(fit("a100-80gb", "NVIDIA-A100-SXM4-80GB") == Fit::kPass);       // tokens need not be adjacent
  CHECK(fit("A100-80GB", "NVIDIA-A100-PCIE-40GB") == Fit::kUnresolvable);
  CHECK(fit("H100", "NVIDIA-GH100X") == Fit::kUnresolvable);             // never part of a token
  CHECK(fit("80GB-A100", "NVIDIA-A100-SXM4-80GB") == Fit::kUnresolvable);  // order counts
  CHECK(fit("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB") == Fit::kPass);
  CHECK(fit("T4", "Tesla-T4") == Fit::kPass);
  // Time-sliced and MIG single-strategy suffixes are not part of the model.
  CHECK(fit("A100-40GB", "NVIDIA-A100-SXM4-40GB-SHARED") == Fit::kPass);
  CHECK(fit("A100", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb") == Fit::kPass);
  CHECK(fit("SHARED", "NVIDIA-A100-SXM4-40GB-SHARED") == Fit::kUnresolvable);
  CHECK(fit("MIG", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb") == Fit::kUnresolvable);
  CHECK(fit("H100, A100-80GB", "NVIDIA-A100-SXM4-80GB") == Fit::kPass);  // a list: any of them
}

TEST_CASE("gpuModel: the names autoscalers label a launched node with match as GFD's do") {
  auto p = rules::make_gpu_model_predicate(rule_support::config());
  auto fit = [&](const char* wanted, const char* name) {
    return check(*p, gpu_pod(1, wanted), gpu_node("n", name, "81920", 8)).fit;
  };
  // Karpenter on AWS and EKS Auto Mode: the GPU's name in lower case.
  CHECK(fit("H100", "h100") == Fit::kPass);
  CHECK(fit("A100", "h100") == Fit::kUnresolvable);
  CHECK(fit("A10G", "a10g") == Fit::kPass);
  CHECK(fit("A10", "a10g") == Fit::kUnresolvable);  // whole tokens: an A10 pod never lands on an A10G
  // GKE's accelerator names.
  CHECK(fit("H100", "nvidia-h100-80gb") == Fit::kPass);
  CHECK(fit("H100", "nvidia-h100-mega-80gb") == Fit::kPass);
  CHECK(fit("A100", "nvidia-tesla-a100") == Fit::kPass);
  CHECK(fit("A100-80GB", "nvidia-a100-80gb") == Fit::kPass);
  CHECK(fit("A100-80GB", "nvidia-tesla-a100") == Fit::kUnresolvable);  // the 40 GB one
  CHECK(fit("T4", "nvidia-tesla-t4") == Fit::kPass);
}

TEST_CASE("gpuModel: a pod may ask for a GPU family (GFD's architecture label), alone or with a model") {
  auto p = rules::make_gpu_model_predicate(rule_support::config());
  NodeView ampere = gpu_node("a", "NVIDIA-A100-SXM4-80GB", "81920", 8);
  ampere.gpu_family = "ampere";
  NodeView hopper = gpu_node("h", "NVIDIA-H100-80GB-HBM3", "81559", 8);
  hopper.gpu_family = "hopper";
  const NodeView unlabelled = gpu_node("u", "A100", "40960", 8);
  PodRequest pod = gpu_pod(1);
  pod.gpu_family = "Ampere";
  CHECK(check(*p, pod, ampere).fit == Fit::kPass);  // without regard to case
  auto r = check(*p, pod, hopper);
  CHECK(r.fit == Fit::kUnresolvable);
  CHECK(r.reason == "gpu family hopper does not match requested Ampere");
  r = check(*p, pod, unlabelled);
  CHECK(r.fit == Fit::kUnresolvable);
  CHECK(r.reason == "node has no gpu.nvidia.com/family or nvidia.com/gpu.family label; pod requests gpu family Ampere");
  pod.gpu_family = "ampere, hopper";
  CHECK(check(*p, pod, hopper).fit == Fit::kPass);
  pod.gpu_model = "A100";  // both asked: both must hold
  CHECK(check(*p, pod, hopper).fit == Fit::kUnresolvable);
  CHECK(check(*p, pod, ampere).fit == Fit::kPass);
}
