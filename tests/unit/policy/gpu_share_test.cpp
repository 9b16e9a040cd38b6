// GPU sharing by memory (gpushare's resources and annotations): devices, the device a pod takes, the
// gpuShare filter and scorer, the placement annotation, and how pods' annotations count on devices.
#include <catch2/catch.hpp>

#include "gpu_extender/policy/gpu_share.h"
#include "rule_support.h"

using namespace gpu_extender;
using rule_support::check;

namespace {

// 4 GPUs of 16 GiB, as gpushare's device plugin reports them.
NodeView share_node(std::string_view name, int devices = 4, int gib_per_device = 16) {
  NodeView n;
  n.name = name;
  n.allocatable.set(ViewSchema::kSharedGpuMemory, devices * gib_per_device * 1000LL);
  n.allocatable.set(ViewSchema::kSharedGpuCount, devices * 1000LL);
  return n;
}

PodRequest share_pod(int gib, Placement placement = Placement::kBinpack) {
  PodRequest p = test_support::gpu_pod(0);
  p.requests.set(ViewSchema::kSharedGpuMemory, gib * 1000LL);
  p.placement = placement;
  return p;
}

// What pods bound with device annotations hold: `gib` on each listed device.
ResourceAmounts on_devices(std::initializer_list<std::pair<int, int>> device_gib) {
  ResourceAmounts used;
  for (auto [device, gib] : device_gib) used.add(shared_gpu_device_slot(static_cast<size_t>(device)), gib * 1000LL);
  return used;
}

}  // namespace

TEST_CASE("share: a node's devices are its shared memory divided by its count, less what pods hold") {
  const NodeView n = share_node("n");
  const ResourceAmounts held = on_devices({{0, 12}, {2, 4}, {2, 6}});
  const auto gpus = shared_gpus({&n, &held});
  REQUIRE(gpus);
  CHECK(gpus->devices == 4);
  CHECK(gpus->per_device == 16);
  CHECK(gpus->free == std::array<int64_t, kMaxSharedGpuDevices>{4, 16, 6, 16, 0, 0, 0, 0});
  CHECK(describe_shared_gpus(*gpus, "GiB") == "free 4/16, 16/16, 6/16, 16/16 GiB");
  // Usage unknown: every device counts as empty.
  CHECK(shared_gpus({&n, std::nullopt})->free[0] == 16);
  // No shared resources, or no devices: not a sharing node.
  const NodeView plain = test_support::gpu_node("plain", "A100", "40960", 8);
  const ResourceAmounts nothing;
  CHECK_FALSE(shared_gpus({&plain, &nothing}));
  // More devices than are tracked: the rest are not shared, and the summary says so.
  const NodeView big = share_node("big", 10, 16);
  const auto many = shared_gpus({&big, &nothing});
  CHECK(many->devices == static_cast<int64_t>(kMaxSharedGpuDevices));
  CHECK(describe_shared_gpus(*many, "GiB").find("devices past 8 of 10 not shared") != std::string::npos);
}

TEST_CASE("share: binpack takes the fullest device that fits, spread the emptiest, the lowest index among equals") {
  const NodeView n = share_node("n");
  const ResourceAmounts held_now = on_devices({{0, 12}, {1, 6}, {3, 6}});
  const auto gpus = *shared_gpus({&n, &held_now});  // free 4, 10, 16, 10
  CHECK(choose_shared_gpu(gpus, 4, Placement::kBinpack) == 0);
  CHECK(choose_shared_gpu(gpus, 5, Placement::kBinpack) == 1);
  CHECK(choose_shared_gpu(gpus, 11, Placement::kBinpack) == 2);
  CHECK(choose_shared_gpu(gpus, 4, Placement::kSpread) == 2);
  CHECK(choose_shared_gpu(gpus, 17, Placement::kBinpack) == -1);
  // Every request size, both placements, against the rule as the test's name states it: among the
  // devices with room, the least free (binpack) or the most free (spread), the lowest index of those.
  const std::vector<int64_t> free = {4, 10, 16, 10};
  for (int64_t want = 1; want <= 17; ++want) {
    for (const Placement placement : {Placement::kBinpack, Placement::kSpread}) {
      int expected = -1;
      for (size_t d = 0; d < free.size(); ++d) {
        if (free[d] < want) continue;
        const bool better = expected < 0 || (placement == Placement::kBinpack ? free[d] < free[expected]
                                                                               : free[d] > free[expected]);
        if (better) expected = static_cast<int>(d);  // strictly better only: ties keep the lower index
      }
      INFO("want " << want << (placement == Placement::kBinpack ? " binpack" : " spread"));
      CHECK(choose_shared_gpu(gpus, want, placement) == expected);
    }
  }
  // assign_shared_gpu counts the memory on the chosen device.
  ResourceAmounts held = share_pod(5).requests;
  CHECK(assign_shared_gpu({&n, &held_now}, Placement::kBinpack, held) == 1);
  CHECK(held.get(shared_gpu_device_slot(1)) == 5000);
  CHECK_FALSE(held.has(shared_gpu_device_slot(0)));
}

TEST_CASE("share: filter gpuShare: too big for any device is unresolvable, busy devices resolvable") {
  auto p = rules::make_gpu_share_predicate(rule_support::config());
  const NodeView n = share_node("n");
  CHECK(check(*p, share_pod(16), n, ResourceAmounts{}).fit == Fit::kPass);
  const auto big = check(*p, share_pod(20), n, ResourceAmounts{});
  CHECK(big.fit == Fit::kUnresolvable);
  CHECK(big.reason == "pod requests 20 GiB of one GPU; the node's GPUs have 16 GiB each");
  const auto busy = check(*p, share_pod(8), n, on_devices({{0, 12}, {1, 10}, {2, 16}, {3, 9}}));
  CHECK(busy.fit == Fit::kResolvable);
  CHECK(busy.reason == "no GPU has 8 GiB free (free 4/16, 6/16, 0/16, 7/16 GiB)");
  const NodeView plain = test_support::gpu_node("plain", "A100", "40960", 8);
  CHECK(check(*p, share_pod(4), plain).reason ==
        "node offers no aliyun.com/gpu-mem and aliyun.com/gpu-count to share; pod requests 4 GiB");
  // Pods that ask no shared memory are not its business.
  CHECK(check(*p, test_support::gpu_pod(1), plain).fit == Fit::kPass);
}

TEST_CASE("share: scorer gpuShare: binpack prefers the node whose best device ends fullest, spread the emptiest node") {
  auto s = rules::make_gpu_share_scorer(rule_support::config());
  CHECK(s->applies(share_pod(4)));
  CHECK_FALSE(s->applies(test_support::gpu_pod(1)));
  const NodeView a = share_node("a"), b = share_node("b");
  const ResourceAmounts a_used = on_devices({{0, 8}});          // a device with 8 free
  const ResourceAmounts b_used = on_devices({{0, 4}, {1, 4}});  // devices with 12 free
  const std::vector<NodeInput> nodes{{&a, &a_used}, {&b, &b_used}};
  const auto packed = rule_support::score(*s, share_pod(8), nodes);
  CHECK(packed[0] == Approx(100.0));  // fills a's device 0
  CHECK(packed[1] == Approx(75.0));   // 4 of 16 left on b's device 0
  const auto spread = rule_support::score(*s, share_pod(8, Placement::kSpread), nodes);
  CHECK(spread[0] == Approx(100.0 * (64 - 8 - 8) / 64));
  CHECK(spread[1] == Approx(100.0 * (64 - 8 - 8) / 64));
  const ResourceAmounts b_full_device = on_devices({{0, 16}});
  const auto spread_small = rule_support::score(*s, share_pod(2, Placement::kSpread), {{&a, &a_used}, {&b, &b_full_device}});
  CHECK(spread_small[0] > spread_small[1]);  // the emptier node
}

TEST_CASE("share: gpuFit with placement spread prefers nodes with GPUs to spare") {
  auto fit = rules::make_gpu_fit_scorer(rule_support::config());
  const NodeView small = test_support::gpu_node("small", "A100", "40960", 2);
  const NodeView large = test_support::gpu_node("large", "A100", "40960", 8);
  PodRequest pod = test_support::gpu_pod(2);
  const ResourceAmounts nothing;
  const std::vector<NodeInput> nodes{{&small, &nothing}, {&large, &nothing}};
  CHECK(rule_support::score(*fit, pod, nodes) == std::vector<double>{100.0, 40.0});
  pod.placement = Placement::kSpread;
  CHECK(rule_support::score(*fit, pod, nodes) == std::vector<double>{0.0, 60.0});
}

TEST_CASE("share: pods' device annotations count on their device, the placement annotation is read") {
  WireDecoder decoder;
  const ViewSchema& schema = rule_support::config().schema;
  auto decode = [&](const std::string& annotations) {
    std::string body = R"({"metadata":{"name":"p","namespace":"ns","annotations":{)" + annotations +
                       R"(}},"spec":{"nodeName":"n","containers":[{"name":"a","resources":{"limits":{"aliyun.com/gpu-mem":"3"}}},
                       {"name":"b","resources":{"limits":{"aliyun.com/gpu-mem":"2"}}}]}})";
    return decoder.decode_pod_object(body, schema);
  };
  const PodRequest plain = decode("");
  CHECK(plain.shared_gpu_memory_milli() == 5000);  // summed over containers
  CHECK_FALSE(plain.shared_gpu_device);
  const PodRequest bound = decode(R"("ALIYUN_COM_GPU_MEM_IDX":"2","ALIYUN_COM_GPU_MEM_POD":"5")");
  CHECK(bound.shared_gpu_device == 2);
  CHECK(bound.requests.get(shared_gpu_device_slot(2)) == 5000);
  // Without the pod memory annotation, the request counts.
  CHECK(decode(R"("ALIYUN_COM_GPU_MEM_IDX":"1")").requests.get(shared_gpu_device_slot(1)) == 5000);
  // A device index that is not one this extender tracks is ignored; the pod still counts on its node.
  for (const char* bad : {R"("ALIYUN_COM_GPU_MEM_IDX":"x")", R"("ALIYUN_COM_GPU_MEM_IDX":"-1")",
                          R"("ALIYUN_COM_GPU_MEM_IDX":"8")"}) {
    const PodRequest p = decode(bad);
    CHECK_FALSE(p.shared_gpu_device);
    for (size_t d = 0; d < kMaxSharedGpuDevices; ++d) CHECK_FALSE(p.requests.has(shared_gpu_device_slot(d)));
  }
  CHECK(decode(R"("gpu.nvidia.com/placement":"spread")").placement == Placement::kSpread);
  CHECK(decode(R"("gpu.nvidia.com/placement":"binpack")").placement == Placement::kBinpack);
  CHECK(decode(R"("gpu.nvidia.com/placement":"random")").invalid_reason ==
        "pod annotation gpu.nvidia.com/placement: expected binpack or spread, not \"random\"");
}
