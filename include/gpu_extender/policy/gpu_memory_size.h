#pragma once
// One GPU, one memory verdict, whoever describes it. Producers report the same GPU's memory differently:
// an H100 80GB is 81559 MiB to NVML (GPU Feature Discovery's nvidia.com/gpu.memory, NVIDIA's DRA driver's
// capacity "81559Mi") and 81920 MiB to Karpenter's instance-gpu-memory; a T4 is 15360 to NVML and 16384 to
// Karpenter. A pod asks the size the GPU is sold with ("80Gi"). So a reported figure is judged as the
// marketed size it stands for: the smallest size of kMarketedGpuGiB at or above it, when the figure is at
// least kReportedFraction of that size (NVML keeps back 1-8% for the driver and ECC); any other figure is
// judged as itself. The judgement is monotone (a larger report is never judged smaller), so the webhook
// can turn "at least N MiB judged" into one threshold on the reported label (lowest_reported_mib).
#include <cstdint>
#include <span>
#include <string_view>

namespace gpu_extender {

// GiB per GPU as GPUs are sold (datacenter and workstation NVIDIA GPUs, K80 to B300; a MIG profile's
// "Ngb" is judged by its own N instead).
inline constexpr int64_t kMarketedGpuGiB[] = {4,  6,  8,  10, 11, 12,  16,  20,  24,  32,  40, 48,
                                              64, 80, 94, 96, 141, 144, 180, 186, 192, 288};
// NVML's figure for a sold size is at least this share of it: T4 15360/16384 = 0.9375, L4 22888/24576 =
// 0.931, P4 7611/8192 = 0.929, K80 11441/12288 = 0.931; H100 81559/81920 = 0.9956.
inline constexpr double kReportedFraction = 0.92;

// The memory (MiB) a GPU reported at `reported_mib` is judged to have, among `sizes_gib` (ascending).
int64_t judged_gpu_memory_mib(int64_t reported_mib, std::span<const int64_t> sizes_gib = kMarketedGpuGiB);

// The smallest reported figure judged at least `wanted_mib`: a node label is enough for the pod exactly
// when it is at least this (the webhook's Gt term is this minus one).
int64_t lowest_reported_mib(int64_t wanted_mib, std::span<const int64_t> sizes_gib = kMarketedGpuGiB);

// The GiB a MIG profile's name says its memory is ("1g.10gb" -> 10, "3g.47gb" -> 47); 0 when it says none.
int64_t mig_profile_gib(std::string_view profile);

}  // namespace gpu_extender
