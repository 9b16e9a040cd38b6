// /bind for pods that share a GPU by memory: the device is chosen here, as gpushare's extender does,
// and written into the pod's annotations (gpushare's protocol) for the device plugin, which reads them
// at Allocate. handlers.cpp calls these around the Binding.
//
// Two binds to one node never take the same free memory twice: the device is chosen and the pod
// counted there (assumed in the cluster view) under one lock, so the next bind sees it. Across
// replicas the Service's ClientIP session affinity sends one scheduler's binds to one replica (the
// scheduler runs one leader), and a replica that takes over sees what the others bound through the
// watch: the pods' own annotations.
#include <spdlog/spdlog.h>

#include <array>
#include <chrono>

#include "gpu_extender/cluster_view.h"
#include "gpu_extender/extender_service.h"
#include "gpu_extender/gpu_share.h"
#include "gpu_extender/quantity.h"

namespace gpu_extender {

namespace {
// gpushare's annotations, in the order /bind writes them: the device and the pod's memory (the two
// the decoder reads back, named in the schema), the device's memory, assigned, assume time.
std::array<std::string, 5> shared_gpu_annotation_names(const ViewSchema& schema) {
  return {schema.pod_shared_gpu_index_annotation, "ALIYUN_COM_GPU_MEM_DEV", schema.pod_shared_gpu_memory_annotation,
          "ALIYUN_COM_GPU_MEM_ASSIGNED", "ALIYUN_COM_GPU_MEM_ASSUME_TIME"};
}
}  // namespace

std::string ExtenderService::assume_on_shared_gpu(const BindingArgs& args, const PendingPod& pod,
                                                  Binder::Annotations& annotations, int& device) const {
  const std::string label = args.pod_namespace + "/" + args.pod_name;
  const Policy& policy = *policy_.load();
  std::vector<std::shared_ptr<const CachedNode>> found;
  const std::string_view name = args.node;
  std::lock_guard<std::mutex> lock(shared_gpu_bind_mutex_);
  parts_.cluster->find_nodes({&name, 1}, found);
  if (found.empty() || !found[0])
    return "cannot bind pod " + label + " to " + args.node + ": the node is not in the extender's node cache";
  const std::optional<ResourceAmounts> used = parts_.cluster->used_on(args.node);
  const NodeInput input(&found[0]->view(), used);
  const std::optional<SharedGpus> gpus = shared_gpus(input);
  ResourceAmounts held = pod.requests;
  device = assign_shared_gpu(input, pod.placement, held);
  const std::string& unit = policy.config().shared_gpu_memory_unit;
  if (device < 0)
    return "cannot bind pod " + label + " to " + args.node + ": no GPU there has " +
           std::to_string(milli_to_units_ceil(pod.requests.get(ViewSchema::kSharedGpuMemory))) + " " + unit +
           " free" + (gpus ? " (" + describe_shared_gpus(*gpus, unit) + ")" : std::string(" (it shares none)"));
  parts_.cluster->assume_pod(args.pod_uid, args.node, held);
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const auto names = shared_gpu_annotation_names(policy.schema());
  const int64_t pod_units = milli_to_units_ceil(pod.requests.get(ViewSchema::kSharedGpuMemory));
  const std::array<std::string, 5> values{std::to_string(device), std::to_string(gpus->per_device),
                                          std::to_string(pod_units), "false", std::to_string(now_ns)};
  annotations.clear();
  for (size_t i = 0; i < names.size(); ++i) annotations.emplace_back(names[i], values[i]);
  return "";
}

void ExtenderService::withdraw_shared_gpu(const BindingArgs& args) const {
  Binder::Annotations removal;
  for (const auto& name : shared_gpu_annotation_names(policy_.load()->schema())) removal.emplace_back(name, std::nullopt);
  const std::string error = parts_.binder->annotate(args.pod_namespace, args.pod_name, args.pod_uid, removal);
  if (!error.empty())
    spdlog::warn("pod {}/{}: its binding failed and its GPU device annotations could not be removed: {}",
                 args.pod_namespace, args.pod_name, error);
}

}  // namespace gpu_extender
