// GPU annotations as node affinity terms: see gpu_affinity.h.
#include "server/admission/gpu_affinity.h"

#include <algorithm>
#include <cctype>

#include "gpu_extender/policy/gpu_memory_size.h"
#include "gpu_extender/policy/gpu_model_match.h"

namespace gpu_extender::admission {
namespace {

struct Named {
  const char* value;
  const char* family;  // GFD's architecture name
};

// The names each vocabulary gives GPUs (their documented values; a value seen on a node is added at run
// time). Families as GPU Feature Discovery writes them.
constexpr Named kAwsNames[] = {  // karpenter.k8s.aws/instance-gpu-name, eks.amazonaws.com/instance-gpu-name
    {"k80", "kepler"},   {"m60", "maxwell"}, {"v100", "volta"},  {"t4", "turing"},   {"t4g", "turing"},
    {"a10g", "ampere"},  {"a100", "ampere"}, {"l4", "ada-lovelace"}, {"l40s", "ada-lovelace"},
    {"h100", "hopper"},  {"h200", "hopper"}, {"b200", "blackwell"}, {"gb200", "blackwell"}};
constexpr Named kGkeNames[] = {  // cloud.google.com/gke-accelerator
    {"nvidia-tesla-k80", "kepler"},     {"nvidia-tesla-p4", "pascal"},       {"nvidia-tesla-p100", "pascal"},
    {"nvidia-tesla-v100", "volta"},     {"nvidia-tesla-t4", "turing"},       {"nvidia-tesla-a100", "ampere"},
    {"nvidia-a100-80gb", "ampere"},     {"nvidia-l4", "ada-lovelace"},       {"nvidia-h100-80gb", "hopper"},
    {"nvidia-h100-mega-80gb", "hopper"}, {"nvidia-h200-141gb", "hopper"},    {"nvidia-b200", "blackwell"},
    {"nvidia-gb200", "blackwell"}};
constexpr Named kGfdNames[] = {  // nvidia.com/gpu.product
    {"Tesla-V100-SXM2-16GB", "volta"},     {"Tesla-V100-SXM2-32GB", "volta"},   {"Tesla-V100-PCIE-16GB", "volta"},
    {"Tesla-T4", "turing"},                {"NVIDIA-A10", "ampere"},            {"NVIDIA-A10G", "ampere"},
    {"NVIDIA-A100-SXM4-40GB", "ampere"},   {"NVIDIA-A100-SXM4-80GB", "ampere"}, {"NVIDIA-A100-PCIE-40GB", "ampere"},
    {"NVIDIA-A100-80GB-PCIe", "ampere"},   {"NVIDIA-L4", "ada-lovelace"},       {"NVIDIA-L40S", "ada-lovelace"},
    {"NVIDIA-H100-80GB-HBM3", "hopper"},   {"NVIDIA-H100-PCIe", "hopper"},      {"NVIDIA-H100-NVL", "hopper"},
    {"NVIDIA-H200", "hopper"},             {"NVIDIA-H200-NVL", "hopper"},       {"NVIDIA-B200", "blackwell"},
    {"NVIDIA-GB200", "blackwell"}};

struct Vocabulary {
  const char* model;
  const char* memory;  // nullptr: the vocabulary has no memory label
  const char* family;  // nullptr: no family label (the catalog's families stand in)
  const Named* names;
  size_t count;
  bool literal;  // hand labels: the pod's own model names, as written, are values too
};
constexpr Vocabulary kVocabularies[] = {
    {"gpu.nvidia.com/model", "gpu.nvidia.com/memory", "gpu.nvidia.com/family", nullptr, 0, true},
    {"nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.family", kGfdNames, std::size(kGfdNames), false},
    {"karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-memory", nullptr, kAwsNames,
     std::size(kAwsNames), false},
    {"eks.amazonaws.com/instance-gpu-name", "eks.amazonaws.com/instance-gpu-memory", nullptr, kAwsNames,
     std::size(kAwsNames), false},
    {"cloud.google.com/gke-accelerator", nullptr, nullptr, kGkeNames, std::size(kGkeNames), false},
};

// A comma-separated annotation's entries, trimmed, empty ones dropped.
std::vector<std::string> entries(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(start, end - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::vector<Term> gpu_affinity_terms(const PodFacts& pod, const SeenValues& seen) {
  const std::vector<std::string> models = pod.gpu_model ? entries(*pod.gpu_model) : std::vector<std::string>{};
  std::vector<std::string> families, family_values;  // lower case; and as the hand labels may write them too
  if (pod.gpu_family)
    for (const std::string& f : entries(*pod.gpu_family)) {
      families.push_back(lower(f));
      family_values.push_back(lower(f));
      if (f != lower(f)) family_values.push_back(f);
    }
  const bool memory = pod.gpu_memory_mib.has_value();
  if (models.empty() && families.empty() && !memory) return {};

  auto model_ok = [&](std::string_view value) {
    return std::any_of(models.begin(), models.end(), [&](const std::string& m) { return rules::gpu_model_matches(m, value); });
  };
  std::vector<Term> terms;
  for (const Vocabulary& v : kVocabularies) {
    if (memory && !v.memory) continue;  // the extender refuses such nodes for a pod asking memory
    Term term;
    // The values of the model label this term admits: the catalog's and the cluster's that the model rule
    // accepts (and, without a family label, whose catalog family is asked); the pod's own names for hand labels.
    const bool by_model = !models.empty();
    const bool by_family_names = !families.empty() && !v.family;
    if (by_model || by_family_names) {
      std::set<std::string> values;
      auto family_ok = [&](const char* family) {
        return !by_family_names || (family && std::find(families.begin(), families.end(), family) != families.end());
      };
      for (size_t i = 0; i < v.count; ++i)
        if ((!by_model || model_ok(v.names[i].value)) && family_ok(v.names[i].family)) values.insert(v.names[i].value);
      if (!by_family_names)  // a value seen on a node has no known family
        if (auto at = seen.find(v.model); at != seen.end())
          for (const std::string& value : at->second)
            if (model_ok(value)) values.insert(value);
      if (v.literal && by_model)
        for (const std::string& m : models) values.insert(m);
      if (values.empty()) continue;  // no node of this vocabulary can be the GPU asked
      term.push_back({v.model, "In", {values.begin(), values.end()}});
    }
    if (!families.empty() && v.family) term.push_back({v.family, "In", family_values});
    // The extender judges a label as the size the GPU is sold with (gpu_memory_size.h): the term admits
    // exactly the labels it judges enough, so an autoscaler launches no node the extender then refuses.
    if (memory) term.push_back({v.memory, "Gt", {std::to_string(lowest_reported_mib(*pod.gpu_memory_mib) - 1)}});
    terms.push_back(std::move(term));
  }
  return terms;
}

}  // namespace gpu_extender::admission
