#pragma once
// What the decoders extract from Kubernetes objects: which labels, annotations and resources.
//
// Built once from the policy configuration and read by every decoder; the wire layer depends on this
// schema, never on the policy itself. Thread-safe: immutable after construction.
#include <string>
#include <vector>

#include "gpu_extender/common/resources.h"

namespace gpu_extender {

struct ViewSchema {
  static constexpr size_t kGpuResource = 0;
  static constexpr size_t kPackedResource = 1;
  // GPU sharing by memory, as gpushare's device plugin reports it: the node's shared GPU memory (all
  // devices together, in the plugin's unit) and its device count; pods request the memory.
  static constexpr size_t kSharedGpuMemory = 2;
  static constexpr size_t kSharedGpuCount = 3;
  // CPU and memory, as kube-scheduler's NodeResourcesFit counts them (requests against allocatable): no
  // rule of the policy reads them, but a pod group's plan does, so that it never stacks members on a node
  // whose CPU or memory the scheduler would then refuse them for (group_plan.h).
  static constexpr size_t kCpu = 4;
  static constexpr size_t kMemory = 5;
  static constexpr size_t kFirstExcludedResource = 6;

  ResourceTable resources;  // [gpu, packed, shared memory, shared count, cpu, memory, excluded..., mig...]
  // MIG in the mixed strategy: each profile is a resource of its own (nvidia.com/mig-1g.5gb), listed
  // in the policy like kube-scheduler's managedResources. They follow the excluded resources in the
  // table. GPU Feature Discovery labels each profile's slices <resource>.count and the memory of one
  // slice <resource>.memory (MiB); those label names are kept here, by profile.
  std::vector<std::string> mig_count_labels, mig_memory_labels;  // by profile

  // Sets the table from the named roles [gpu, packed, shared memory, shared count, cpu, memory], the excluded and
  // the MIG resources, and the MIG label names.
  void set_resources(std::vector<std::string> roles, const std::vector<std::string>& excluded,
                     const std::vector<std::string>& mig) {
    for (const auto& name : excluded) roles.push_back(name);
    mig_count_labels.clear();
    mig_memory_labels.clear();
    for (const auto& name : mig) {
      roles.push_back(name);
      mig_count_labels.push_back(name + ".count");
      mig_memory_labels.push_back(name + ".memory");
    }
    resources = ResourceTable(std::move(roles));
    set_dra_gpu_classes(dra_gpu_classes);
  }
  // The device classes whose devices are GPUs; a pod asking one's implicit extended resource
  // (deviceclass.resource.kubernetes.io/<class>, which the scheduler serves from the class's devices like
  // its extendedResourceName, 1.36+) asks that many GPUs, as one asking the GPU resource does.
  static constexpr const char* kDeviceClassResourcePrefix = "deviceclass.resource.kubernetes.io/";
  void set_dra_gpu_classes(std::vector<std::string> classes) {
    dra_gpu_classes = std::move(classes);
    std::vector<std::string> implicit;
    for (const std::string& c : dra_gpu_classes) implicit.push_back(kDeviceClassResourcePrefix + c);
    resources.set_aliases(kGpuResource, implicit);
  }
  size_t mig_profiles() const { return mig_count_labels.size(); }
  size_t first_mig_resource() const { return resources.size() - mig_profiles(); }
  size_t mig_resource(size_t profile) const { return first_mig_resource() + profile; }

  // Each node fact is read from the first of its labels the node carries: the hand-set labels of the
  // node set-up script first, then those NVIDIA's GPU Feature Discovery writes on a GPU Operator
  // cluster, then those an autoscaler puts on a node it launches, before GFD runs there (Karpenter on
  // AWS, EKS Auto Mode: a lower-case name such as "h100", MiB per GPU, a count; GKE: its accelerator name,
  // such as "nvidia-h100-80gb", which the model rule's token match reads as H100). At most
  // kMaxLabelsPerFact each; NodeView says which one a value came from.
  static constexpr size_t kMaxLabelsPerFact = 6;
  std::vector<std::string> node_gpu_model_labels{"gpu.nvidia.com/model", "nvidia.com/gpu.product",
                                                 "karpenter.k8s.aws/instance-gpu-name", "eks.amazonaws.com/instance-gpu-name",
                                                 "cloud.google.com/gke-accelerator"};
  std::vector<std::string> node_gpu_memory_labels{"gpu.nvidia.com/memory", "nvidia.com/gpu.memory",
                                                  "karpenter.k8s.aws/instance-gpu-memory",
                                                  "eks.amazonaws.com/instance-gpu-memory"};
  std::vector<std::string> node_gpu_count_labels{"gpu.nvidia.com/count", "nvidia.com/gpu.count",
                                                 "karpenter.k8s.aws/instance-gpu-count", "eks.amazonaws.com/instance-gpu-count"};
  // The GPU architecture (volta, turing, ampere, ada-lovelace, hopper, blackwell: GFD's values).
  std::vector<std::string> node_gpu_family_labels{"gpu.nvidia.com/family", "nvidia.com/gpu.family"};
  // Time-slicing: how many pods share each GPU (the device plugin then reports GPUs x replicas of the
  // GPU resource). GFD writes it on every node, 1 where GPUs are not shared.
  std::vector<std::string> node_gpu_replicas_labels{"nvidia.com/gpu.replicas"};
  std::string node_gpu_utilization_annotation = "gpu.nvidia.com/utilization";
  // Dynamic Resource Allocation: the GPUs a DRA driver publishes as ResourceSlices (resource_slice_view.h)
  // give a node's GPU facts where it has any, in place of its labels and allocatable. The driver, and
  // the attribute and capacity names that carry each fact (NVIDIA's; a name matches unqualified or
  // qualified by the driver, "gpu.nvidia.com/productName"). Devices whose type attribute is present and
  // is not dra_gpu_type (MIG partitions) are not whole GPUs.
  std::string dra_gpu_driver = "gpu.nvidia.com";
  std::string dra_model_attribute = "productName";
  std::string dra_architecture_attribute = "architecture";
  std::string dra_type_attribute = "type";
  std::string dra_gpu_type = "gpu";
  // A device held by a claim occupies a whole GPU: the GPU itself, or for a partition (MIG) the GPU whose
  // uuid attribute its parent attribute names.
  std::string dra_uuid_attribute = "uuid";
  std::string dra_parent_attribute = "parentUUID";
  std::string dra_memory_capacity = "memory";
  // The device classes whose devices are GPUs: a claim's request of one of them asks for GPUs (a pod
  // asking through such a claim is judged as a pod asking nvidia.com/gpu for that many).
  std::vector<std::string> dra_gpu_classes{"gpu.nvidia.com"};
  // Network topology levels, top (broadest) to bottom (closest), at most kMaxTopologyLevels: each a
  // node label. A node carries the levels of its provider; a domain at a level is the node's value
  // there with the values of the levels above it that it carries (values are unique only under their
  // parent). The zone is on top, so no domain spans zones; the hostname at the bottom.
  std::vector<std::string> node_topology_labels{
      "topology.kubernetes.io/zone",
      "topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
      "topology.k8s.aws/network-node-layer-3", "topology.k8s.aws/network-node-layer-4",
      "cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
      "cloud.google.com/gce-topology-host",
      "network.topology.nvidia.com/core", "network.topology.nvidia.com/spine",
      "network.topology.nvidia.com/leaf", "network.topology.nvidia.com/accelerator",
      "nvidia.com/gpu.clique",
      "kubernetes.io/hostname"};
  // Pod groups (distributed jobs, placed whole: group_plan.h). A pod's group is the first of these
  // annotations it carries, else the first of these labels: ours, then the conventions of Volcano,
  // scheduler-plugins' coscheduling and Kueue. Its size and topology constraint: the first annotation
  // of each list. At most kMaxLabelsPerFact names each.
  std::vector<std::string> pod_group_annotations{"gpu.nvidia.com/group", "scheduling.k8s.io/group-name"};
  std::vector<std::string> pod_group_labels{"scheduling.x-k8s.io/pod-group", "kueue.x-k8s.io/pod-group-name"};
  std::vector<std::string> pod_group_size_annotations{"gpu.nvidia.com/group-size", "kueue.x-k8s.io/pod-group-total-count"};
  std::vector<std::string> pod_required_topology_annotations{"gpu.nvidia.com/required-topology",
                                                             "kueue.x-k8s.io/podset-required-topology"};
  std::vector<std::string> pod_preferred_topology_annotations{"gpu.nvidia.com/preferred-topology",
                                                              "kueue.x-k8s.io/podset-preferred-topology"};
  std::string pod_gpu_model_annotation = "gpu.nvidia.com/model";
  std::string pod_gpu_memory_annotation = "gpu.nvidia.com/memory";
  std::string pod_gpu_family_annotation = "gpu.nvidia.com/family";
  // How the pod wants to be placed: binpack (the default) or spread, for its shared GPU memory (which
  // device) and its whole GPUs (which node), as HAMi's per-pod policies.
  std::string pod_placement_annotation = "gpu.nvidia.com/placement";
  // gpushare's protocol (fixed names: its device plugin reads them): the device a bound pod's shared
  // memory is on, and that memory, as the extender wrote them at bind.
  std::string pod_shared_gpu_index_annotation = "ALIYUN_COM_GPU_MEM_IDX";
  std::string pod_shared_gpu_memory_annotation = "ALIYUN_COM_GPU_MEM_POD";
  // Pod deletion costs (fixed names, see deletion_cost.h).
  std::string pod_deletion_cost_annotation = "controller.kubernetes.io/pod-deletion-cost";
  std::string pod_deletion_cost_written_annotation = "gpu.nvidia.com/deletion-cost-written";

  // Two policies with equal schemas read the same labels, annotations and resources: a reload may swap
  // one for the other while the cluster view built with the first stays valid. Every field counts.
  bool operator==(const ViewSchema&) const = default;
};

// "a", "a or b", "a, b or c": the labels of one fact, for messages.
inline std::string label_names(const std::vector<std::string>& labels) {
  std::string out;
  for (size_t i = 0; i < labels.size(); ++i) out += (i == 0 ? "" : i + 1 == labels.size() ? " or " : ", ") + labels[i];
  return out;
}

}  // namespace gpu_extender
