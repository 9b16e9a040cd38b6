// gpuFit, gpuIdle and resourcePacking: the formulas of the design documents.
#include <catch2/catch.hpp>

#include "policy/rule_support.h"

using namespace gpu_extender;
using rule_support::score;
using test_support::gpu_node;
using test_support::gpu_pod;
using test_support::used;

TEST_CASE("gpuFit: 100 - |gpus - request| * 10, floored at 0") {
  auto s = rules::make_gpu_fit_scorer(rule_support::config());
  const NodeView two = gpu_node("a", "A100", "1", 2), eight = gpu_node("b", "A100", "1", 8),
                 big = gpu_node("c", "A100", "1", 16);
  const auto raw = score(*s, gpu_pod(2), {{&two, {}}, {&eight, {}}, {&big, {}}});
  CHECK(raw == std::vector<double>{100, 40, 0});
  CHECK(s->applies(gpu_pod(1)));
  CHECK_FALSE(s->applies(gpu_pod(0)));
}

TEST_CASE("gpuFit: free GPUs count where usage is known") {
  auto s = rules::make_gpu_fit_scorer(rule_support::config());
  const NodeView eight = gpu_node("b", "A100", "1", 8);
  const ResourceAmounts six = used(ViewSchema::kGpuResource, 6);
  const auto raw = score(*s, gpu_pod(2), {{&eight, &six}});
  CHECK(raw == std::vector<double>{100});
}

TEST_CASE("gpuFit: a time-sliced node counts whole GPUs, its GPU resource / replicas") {
  auto s = rules::make_gpu_fit_scorer(rule_support::config());
  // Two GPUs shared 4 ways: the device plugin reports 8 of the GPU resource.
  NodeView shared = gpu_node("s", "NVIDIA-A100-SXM4-80GB-SHARED", "81920", 8);
  shared.gpu_replicas = "4";
  const NodeView one = gpu_node("o", "A100", "81920", 1);
  auto raw = score(*s, gpu_pod(1), {{&shared, {}}, {&one, {}}});
  CHECK(raw == std::vector<double>{90, 100});  // 2 GPUs for a 1-share pod: one spare
  // 6 of the 8 shares in use: half a GPU is free.
  const ResourceAmounts six = used(ViewSchema::kGpuResource, 6);
  raw = score(*s, gpu_pod(1), {{&shared, &six}});
  CHECK(raw == std::vector<double>{95});
  // Not a whole number of at least 1: not shared.
  for (const char* bad : {"0", "x", "2.5", "-4"}) {
    shared.gpu_replicas = bad;
    CHECK(score(*s, gpu_pod(1), {{&shared, {}}}) == std::vector<double>{30});
  }
}

TEST_CASE("gpuIdle: (1 - utilisation) * 100, from the annotation, else usage, else 0") {
  auto s = rules::make_gpu_idle_scorer(rule_support::config());
  NodeView annotated = gpu_node("a", "A100", "1", 8);
  annotated.gpu_utilization = "0.25";
  NodeView clamped = gpu_node("b", "A100", "1", 8);
  clamped.gpu_utilization = "1.7";
  NodeView junk = gpu_node("c", "A100", "1", 8);
  junk.gpu_utilization = "busy";
  const NodeView plain = gpu_node("d", "A100", "1", 8);
  const ResourceAmounts two = used(ViewSchema::kGpuResource, 2);
  const auto raw = score(*s, gpu_pod(1),
                         {{&annotated, {}}, {&clamped, {}}, {&junk, &two}, {&plain, {}}});
  CHECK(raw[0] == Approx(75));
  CHECK(raw[1] == Approx(0));
  CHECK(raw[2] == Approx(75));  // 2 of 8 in use
  CHECK(raw[3] == Approx(100));
}

TEST_CASE("resourcePacking: most aaa in use first, then most aaa capacity") {
  auto s = rules::make_resource_packing_scorer(rule_support::config());
  PodRequest pod = gpu_pod(0);
  pod.requests.set(ViewSchema::kPackedResource, 1000);
  NodeView master, worker1;
  master.allocatable.set(ViewSchema::kPackedResource, 5000);
  worker1.allocatable.set(ViewSchema::kPackedResource, 10000);
  // master has 3 in use: it wins despite less capacity.
  const ResourceAmounts nothing, one = used(ViewSchema::kPackedResource, 1), three = used(ViewSchema::kPackedResource, 3),
                        four = used(ViewSchema::kPackedResource, 4);
  auto raw = score(*s, pod, {{&master, &three}, {&worker1, &nothing}});
  CHECK(raw[0] > raw[1]);
  // Equal use: more capacity wins.
  raw = score(*s, pod, {{&master, &four}, {&worker1, &four}});
  CHECK(raw[1] > raw[0]);
  // One more unit in use outweighs any capacity difference.
  NodeView huge;
  huge.allocatable.set(ViewSchema::kPackedResource, 1000000);
  raw = score(*s, pod, {{&master, &one}, {&huge, &nothing}});
  CHECK(raw[0] > raw[1]);
  for (double v : raw) CHECK((v >= 0 && v <= 100));
  CHECK_FALSE(s->applies(gpu_pod(1)));
}
