#pragma once
// DRA objects as NVIDIA's driver and the scheduler write them, for the DRA tests (dra_slices_test.cpp,
// dra_claims_test.cpp): a GPU's device, a node's ResourceSlice, a ResourceClaim as the scheduler leaves it
// allocated; an H100 pod, and names mode's /filter of it over a DRA node and a plain one.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "http_support.h"
#include "scheduler_driver.h"  // pending_pod

namespace dra_support {

using nlohmann::json;

// A GPU not in MIG mode as NVIDIA's DRA driver publishes it (cmd/gpu-kubelet-plugin/deviceinfo.go):
// "gpu-<minor>", memory as NVML reports it (an H100 80GB: 81559Mi), no "index" attribute.
inline json whole_gpu(const std::string& node, int minor, const std::string& product = "NVIDIA H100 80GB HBM3",
                      const std::string& architecture = "Hopper", const std::string& memory = "81559Mi") {
  return {{"name", "gpu-" + std::to_string(minor)},
          {"attributes",
           {{"type", {{"string", "gpu"}}},
            {"uuid", {{"string", "GPU-" + node + "-" + std::to_string(minor)}}},
            {"productName", {{"string", product}}},
            {"brand", {{"string", "Nvidia"}}},
            {"architecture", {{"string", architecture}}},
            {"cudaComputeCapability", {{"version", "9.0.0"}}},
            {"driverVersion", {{"version", "580.95.5"}}},
            {"cudaDriverVersion", {{"version", "13.0.0"}}},
            {"resource.kubernetes.io/pciBusID", {{"string", "0000:" + std::to_string(10 + minor) + ":00.0"}}}}},
          {"capacity", {{"memory", {{"value", memory}}}}}};
}

inline json slice_of(const std::string& node, const json& devices, int generation = 1, const std::string& suffix = "x7k2p") {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", node + "-gpu.nvidia.com-" + suffix}}},
          {"spec",
           {{"driver", "gpu.nvidia.com"},
            {"pool", {{"name", node}, {"generation", generation}, {"resourceSliceCount", 1}}},
            {"nodeName", node},
            {"devices", devices}}}};
}

// A slice of `node` with `gpus` H100s as the driver publishes it.
inline json h100_slice(const std::string& node, int gpus) {
  json devices = json::array();
  for (int i = 0; i < gpus; ++i) devices.push_back(whole_gpu(node, i));
  return slice_of(node, devices);
}

// A claim as the scheduler leaves it after allocating `devices` of dra-0 (PreBind): the allocation's
// results and node selector, reserved for pod `pod_uid`. Extended-resource claims are owned by their pod
// and annotated so.
inline json allocated_claim(const std::string& name, const std::vector<std::string>& devices, const std::string& pod_uid,
                            bool extended_resource = false, const std::string& share_id = "") {
  json results = json::array();
  for (const std::string& d : devices) {
    json r = {{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "dra-0"}, {"device", d}};
    if (!share_id.empty()) r["shareID"] = share_id;
    results.push_back(r);
  }
  json metadata = {{"name", name}, {"namespace", "burst"}, {"uid", "claim-uid-" + name}};
  if (extended_resource) {
    metadata["annotations"] = {{"resource.kubernetes.io/extended-resource-claim", "true"}};
    metadata["ownerReferences"] = {{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "owner"}, {"uid", pod_uid},
                                    {"controller", true}}};
  }
  json selector = {{"nodeSelectorTerms",
                    {{{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"dra-0"}}}}}}}}};
  json status = {{"allocation", {{"devices", {{"results", results}}}, {"nodeSelector", selector}}}};
  if (!extended_resource) status["reservedFor"] = {{{"resource", "pods"}, {"name", "owner"}, {"uid", pod_uid}}};
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", metadata},
          {"spec", {{"devices", {{"requests", {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}}}}}}}},
          {"status", status}};
}

inline json h100_pod(const std::string& name, int gpus) {
  json pod = test_support::pending_pod(name, gpus, 0);
  pod["metadata"]["annotations"]["gpu.nvidia.com/model"] = "H100";
  return pod;
}

inline json names_filter(test_support::ExtenderProcess& p, const json& pod) {
  const json body = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"dra-0", "plain-0"}}};
  auto res = test_support::post(p, "/filter", body.dump());
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return json::parse(res->body);
}

}  // namespace dra_support
