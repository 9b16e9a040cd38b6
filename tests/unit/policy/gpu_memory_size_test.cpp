// One GPU, one memory verdict: the figures each producer reports for the same GPU are judged alike.
#include <catch2/catch.hpp>

#include "gpu_extender/policy/gpu_memory_size.h"
#include "rule_support.h"

using namespace gpu_extender;
using rule_support::check;
using test_support::gpu_node;
using test_support::gpu_pod;

namespace {
// The same GPU as each producer reports it, MiB per GPU, with the GiB it is sold with. NVML's figures
// are what GPU Feature Discovery labels (nvidia.com/gpu.memory) and NVIDIA's DRA driver publishes
// (capacity memory "<n>Mi"), as seen on these GPUs; Karpenter's are its AWS instance-type data
// (karpenter.k8s.aws/instance-gpu-memory); EC2's DescribeInstanceTypes MemoryInfo.SizeInMiB.
struct Reported {
  const char* gpu;
  int64_t sold_gib;
  std::vector<int64_t> figures;
};
const std::vector<Reported> kGpus = {
    {"Tesla-T4", 16, {15360, 16384, 15109}},
    {"NVIDIA-L4", 24, {23034, 22888, 24576}},
    {"NVIDIA-A10G", 24, {23028, 22731, 24576}},
    {"NVIDIA-L40S", 48, {46068, 45776, 49152}},
    {"NVIDIA-A100-SXM4-40GB", 40, {40536, 40960}},
    {"NVIDIA-A100-SXM4-80GB", 80, {81920, 81251}},
    {"NVIDIA-H100-80GB-HBM3", 80, {81559, 81920}},
    {"NVIDIA-H100-NVL", 94, {95830, 96256}},
    {"NVIDIA-GH200-480GB", 96, {97871}},
    {"NVIDIA-H200", 141, {143771, 144384}},
    {"NVIDIA-B200", 180, {183359, 184320}},
    {"Tesla-V100-SXM2-16GB", 16, {16160, 16384}},
    {"Tesla-V100-SXM2-32GB", 32, {32510, 32768}},
};
}  // namespace

TEST_CASE("gpu memory: every producer's figure for a GPU is judged the size it is sold with") {
  for (const Reported& r : kGpus)
    for (const int64_t figure : r.figures) {
      INFO(r.gpu << " reported " << figure);
      CHECK(judged_gpu_memory_mib(figure) == r.sold_gib * 1024);
    }
}

TEST_CASE("gpu memory: a pod asking a sold size lands on that GPU whoever labels it, never on a smaller one") {
  auto p = rules::make_gpu_memory_predicate(rule_support::config());
  for (const Reported& asked : kGpus)
    for (const Reported& gpu : kGpus)
      for (const int64_t figure : gpu.figures) {
        INFO(asked.sold_gib << " GiB asked, " << gpu.gpu << " reported " << figure);
        const auto r = check(*p, gpu_pod(1, std::nullopt, asked.sold_gib * 1024),
                             gpu_node("n", gpu.gpu, std::to_string(figure), 8));
        CHECK((r.fit == Fit::kPass) == (gpu.sold_gib >= asked.sold_gib));
      }
  // The reason gives the reported and the judged figure.
  const auto r = check(*p, gpu_pod(1, std::nullopt, 141 * 1024), gpu_node("n", "H100", "81559", 8));
  CHECK(r.reason == "gpu memory 81559 MiB per GPU (judged 80 GiB, the size it is sold with) is below requested "
                    "144384 MiB");
}

TEST_CASE("gpu memory: a figure far below any sold size is judged as itself, and the judgement is monotone") {
  CHECK(judged_gpu_memory_mib(22000) == 22000);  // 0.895 of 24 GiB: not an NVML figure of a 24 GiB GPU
  CHECK(judged_gpu_memory_mib(75000) == 75000);
  CHECK(judged_gpu_memory_mib(75367) == 81920);
  CHECK(judged_gpu_memory_mib(400000) == 400000);  // above every size
  CHECK(judged_gpu_memory_mib(0) == 0);
  int64_t last = 0;
  for (int64_t mib = 0; mib <= 300 * 1024; mib += 7) {
    const int64_t judged = judged_gpu_memory_mib(mib);
    REQUIRE(judged >= mib);
    REQUIRE(judged >= last);
    last = judged;
  }
}

TEST_CASE("gpu memory: lowest_reported_mib is the exact threshold judged_gpu_memory_mib implies") {
  for (const int64_t wanted : {1, 1024, 16384, 20000, 24576, 40960, 81559, 81920, 102400, 144384, 300000}) {
    const int64_t low = lowest_reported_mib(wanted);
    INFO(wanted);
    CHECK(judged_gpu_memory_mib(low) >= wanted);
    CHECK(judged_gpu_memory_mib(low - 1) < wanted);
  }
  CHECK(lowest_reported_mib(81920) == 75367);
  CHECK(lowest_reported_mib(102400) == 102400);  // no sold size between 96 and 141 GiB covers it
}

TEST_CASE("gpu memory: a MIG profile's size is the one its name gives, and its slices are judged by it") {
  CHECK(mig_profile_gib("nvidia.com/mig-1g.10gb") == 10);
  CHECK(mig_profile_gib("nvidia.com/mig-3g.47gb") == 47);
  CHECK(mig_profile_gib("nvidia.com/mig-1g.12gb+me") == 12);
  CHECK(mig_profile_gib("nvidia.com/gpu") == 0);
  CHECK(mig_profile_gib("gb") == 0);
  const int64_t ten[] = {10};
  CHECK(judged_gpu_memory_mib(9728, ten) == 10240);  // GFD's nvidia.com/mig-1g.10gb.memory on an A100
  CHECK(judged_gpu_memory_mib(4864, ten) == 4864);
}
