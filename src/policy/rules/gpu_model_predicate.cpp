// Filter 1: the node's GPU model must be one the pod asks for (annotation, a model or a comma-separated
// list; each matched by gpu_model_matches, which understands GPU Feature Discovery's product names),
// and its family one the pod asks for (annotation gpu.nvidia.com/family: "ampere", "ampere,hopper").
// Unresolvable: evicting pods never changes a node's GPUs.
#include "common/case_insensitive.h"
#include "gpu_extender/policy/gpu_model_match.h"
#include "policy/reason.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Whether `have` matches any entry of the comma-separated `wanted_list`, by `matches`.
template <typename Matches>
bool listed(std::string_view wanted_list, std::string_view have, Matches matches) {
  while (!wanted_list.empty()) {
    const size_t comma = wanted_list.find(',');
    if (matches(trim(wanted_list.substr(0, comma)), have)) return true;
    if (comma == std::string_view::npos) break;
    wanted_list.remove_prefix(comma + 1);
  }
  return false;
}

class GpuModelPredicate final : public Predicate {
 public:
  GpuModelPredicate(const std::vector<std::string>& model_labels, const std::vector<std::string>& family_labels)
      : model_labels_(label_names(model_labels)), family_labels_(label_names(family_labels)) {}
  std::string_view name() const override { return "gpuModel"; }

  Fit check(const PodFacts& pod, const NodeInput& input, std::string& reason) const override {
    if (pod.gpu_model && !trim(*pod.gpu_model).empty()) {
      const auto& model = input.node->gpu_model;
      if (!model)
        return refuse(reason, Fit::kUnresolvable, "node has no ", model_labels_, " label; pod requests gpu model ",
                      *pod.gpu_model);
      if (!listed(*pod.gpu_model, trim(*model), gpu_model_matches))
        return refuse(reason, Fit::kUnresolvable, "gpu model ", *model, " does not match requested ", *pod.gpu_model);
    }
    // A family (GPU Feature Discovery's architecture: ampere, hopper, ...) is one word: equal, any case.
    if (pod.gpu_family && !trim(*pod.gpu_family).empty()) {
      const auto& family = input.node->gpu_family;
      if (!family)
        return refuse(reason, Fit::kUnresolvable, "node has no ", family_labels_, " label; pod requests gpu family ",
                      *pod.gpu_family);
      if (!listed(*pod.gpu_family, trim(*family), [](std::string_view a, std::string_view b) { return equals_ignore_case(a, b); }))
        return refuse(reason, Fit::kUnresolvable, "gpu family ", *family, " does not match requested ", *pod.gpu_family);
    }
    return Fit::kPass;
  }

 private:
  std::string model_labels_, family_labels_;
};

}  // namespace

std::unique_ptr<Predicate> make_gpu_model_predicate(const PolicyConfig& config) {
  return std::make_unique<GpuModelPredicate>(config.schema.node_gpu_model_labels, config.schema.node_gpu_family_labels);
}

}  // namespace gpu_extender::rules
