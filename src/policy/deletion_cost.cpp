#include "gpu_extender/policy/deletion_cost.h"

#include <algorithm>
#include <cmath>

namespace gpu_extender {

std::optional<DeletionCost> deletion_cost(const ResourceAmounts& pod_requests, const NodeView& node,
                                          const ResourceAmounts& used_on_node, const ViewSchema& schema,
                                          const DeletionCostPolicy& policy) {
  std::optional<DeletionCost> out;
  for (size_t r : {ViewSchema::kGpuResource, ViewSchema::kPackedResource, ViewSchema::kSharedGpuMemory}) {
    if (!pod_requests.has(r) || pod_requests.get(r) <= 0) continue;
    const auto offered = node.offered(r);
    if (!offered || *offered <= 0) continue;
    const int64_t used = used_on_node.has(r) ? used_on_node.get(r) : 0;
    const double fullness = std::clamp(static_cast<double>(used) / static_cast<double>(*offered), 0.0, 1.0);
    if (out && fullness <= out->fullness) continue;
    if (!out) out.emplace();
    out->fullness = fullness;
    out->resource = schema.resources.name(r);
  }
  if (!out) return out;
  out->bucket = static_cast<int>(std::floor(out->fullness * policy.buckets));
  out->cost = static_cast<int64_t>(std::llround(static_cast<double>(out->bucket) * static_cast<double>(policy.max_cost) /
                                                static_cast<double>(policy.buckets)));
  return out;
}

CostAction deletion_cost_action(const std::optional<std::string_view>& current,
                                const std::optional<std::string_view>& written, int64_t desired) {
  if (!current) return CostAction::kWrite;
  if (!written || *written != *current) return CostAction::kUserOwned;
  return *current == std::to_string(desired) ? CostAction::kUpToDate : CostAction::kWrite;
}

std::shared_ptr<const CostedPod> costed_pod_of(const PodRequest& pod) {
  if (pod.gpus_milli() <= 0 && !pod.wants_packed_resource() && !pod.wants_shared_gpu()) return nullptr;
  auto own = [](const std::optional<std::string_view>& v) {
    return v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
  };
  return std::make_shared<const CostedPod>(CostedPod{std::string(pod.ns), std::string(pod.name), std::string(pod.uid),
                                                     std::string(pod.node_name), std::string(pod.scheduler_name),
                                                     pod.requests, own(pod.deletion_cost),
                                                     own(pod.deletion_cost_written)});
}

bool keeps_cost_of(const CostedPod& pod, const std::vector<std::string>& schedulers) {
  const std::string scheduler = pod.scheduler_name.empty() ? "default-scheduler" : pod.scheduler_name;
  return std::find(schedulers.begin(), schedulers.end(), scheduler) != schedulers.end();
}

std::optional<CostDecision> decide_deletion_cost(const CostedPod& pod, const NodeView& node,
                                                 const ResourceAmounts& used_on_node, const PolicyConfig& config) {
  std::optional<DeletionCost> desired = deletion_cost(pod.requests, node, used_on_node, config.schema, config.deletion_cost);
  if (!desired) return std::nullopt;
  CostDecision out{*desired, CostAction::kUpToDate};
  auto view = [](const std::optional<std::string>& s) {
    return s ? std::optional<std::string_view>(*s) : std::nullopt;
  };
  out.action = deletion_cost_action(view(pod.current), view(pod.written), desired->cost);
  return out;
}

const char* to_string(CostAction action) {
  switch (action) {
    case CostAction::kWrite: return "write";
    case CostAction::kUpToDate: return "up to date";
    case CostAction::kUserOwned: return "set by someone else: left alone";
  }
  return "?";
}

}  // namespace gpu_extender
