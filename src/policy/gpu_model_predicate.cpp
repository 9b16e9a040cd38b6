// Filter 1: the node's GPU model must be one the pod asks for (annotation, a model or a comma-separated
// list; each matched by gpu_model_matches, which understands GPU Feature Discovery's product names).
// Unresolvable: evicting pods never changes a node's GPUs.
#include "gpu_model_match.h"
#include "reason.h"
#include "rules.h"

namespace gpu_extender::rules {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool model_listed(std::string_view wanted_list, std::string_view model) {
  while (!wanted_list.empty()) {
    const size_t comma = wanted_list.find(',');
    if (gpu_model_matches(trim(wanted_list.substr(0, comma)), model)) return true;
    if (comma == std::string_view::npos) break;
    wanted_list.remove_prefix(comma + 1);
  }
  return false;
}

class GpuModelPredicate final : public Predicate {
 public:
  explicit GpuModelPredicate(const std::vector<std::string>& labels) : labels_(label_names(labels)) {}
  std::string_view name() const override { return "gpuModel"; }

  Fit check(const PodRequest& pod, const NodeInput& input, std::string& reason) const override {
    if (!pod.gpu_model || trim(*pod.gpu_model).empty()) return Fit::kPass;
    const auto& model = input.node->gpu_model;
    if (!model)
      return refuse(reason, Fit::kUnresolvable, "node has no ", labels_, " label; pod requests gpu model ", *pod.gpu_model);
    if (model_listed(*pod.gpu_model, trim(*model))) return Fit::kPass;
    return refuse(reason, Fit::kUnresolvable, "gpu model ", *model, " does not match requested ", *pod.gpu_model);
  }

 private:
  std::string labels_;
};

}  // namespace

std::unique_ptr<Predicate> make_gpu_model_predicate(const PolicyConfig& config) {
  return std::make_unique<GpuModelPredicate>(config.schema.node_gpu_model_labels);
}

}  // namespace gpu_extender::rules
