#pragma once
// Whether a node's GPU model is the one a pod asks for.
//
// Nodes name their GPUs two ways: a hand-set label ("A100") or GPU Feature Discovery's product name
// ("NVIDIA-A100-SXM4-80GB": the NVML name, spaces turned into dashes, "-SHARED" appended when the GPU
// is time-sliced, "-MIG-<profile>" in MIG single strategy). The rule, so that a pod's "A100" matches
// both:
//   - the node's "-SHARED" and "-MIG-..." suffixes are not part of the model;
//   - both names are split into dash-separated tokens, compared without regard to case;
//   - every token the pod names must appear among the node's, whole and in the same order.
// So "A100" matches NVIDIA-A100-SXM4-80GB and NVIDIA-A100-PCIE-40GB, "A100-80GB" only the first,
// "H100" never NVIDIA-GH100X (a token is never matched in part), "SXM4-A100" nothing (order).
#include <string_view>

namespace gpu_extender::rules {

bool gpu_model_matches(std::string_view wanted, std::string_view node_model);

}  // namespace gpu_extender::rules
