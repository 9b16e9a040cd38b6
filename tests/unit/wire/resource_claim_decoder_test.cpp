// ResourceClaims as kube-scheduler leaves them after allocating (resource.k8s.io/v1): the devices of the
// allocation, the node its selector names, the pods it is reserved for or owned by, and whether the
// scheduler made it for a DRA extended resource; lists, watch events, and errors that name the field.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "gpu_extender/wire/wire.h"

using namespace gpu_extender;

namespace {

const ViewSchema kNoSchema;  // what these kinds decode reads no schema
// A claim made from a template for pod "worker-0" and allocated on node `node` (two GPUs, one shared).
std::string claim_json(const std::string& node) {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"worker-0-gpus-x2v9q",)"
         R"("namespace":"train","uid":"c-1","resourceVersion":"90","annotations":{"resource.kubernetes.io/pod-claim-name":"gpus"},)"
         R"("ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"worker-0","uid":"p-0","controller":true,"blockOwnerDeletion":true}]},)"
         R"("spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"ExactCount","count":2,)"
         R"J("selectors":[{"cel":{"expression":"device.attributes[\"gpu.nvidia.com\"].productName.startsWith(\"NVIDIA H100\")"}}]}}]}},)J"
         R"("status":{"allocation":{"devices":{"results":[{"request":"gpus","driver":"gpu.nvidia.com","pool":")" + node +
         R"(","device":"gpu-0"},{"request":"gpus","driver":"gpu.nvidia.com","pool":")" + node +
         R"(","device":"gpu-1","shareID":"7f3a","consumedCapacity":{"memory":"20Gi"}}],"config":[]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":)"
         R"([{"key":"metadata.name","operator":"In","values":[")" + node + R"("]}]}]},"allocationTimestamp":"2026-12-04T10:00:00Z"},)"
         R"("reservedFor":[{"resource":"pods","name":"worker-0","uid":"p-0"}]}})";
}

std::string describe(const ResourceClaimView& c) {
  std::string out = std::string(c.ns) + "/" + std::string(c.name) + " uid " + std::string(c.uid) + " on " +
                    std::string(c.node.empty() ? "-" : c.node) + ":";
  for (const DraResultView& r : c.results)
    out += " " + std::string(r.driver) + "/" + std::string(r.pool) + "/" + std::string(r.device) +
           (r.share_id.empty() ? "" : "#" + std::string(r.share_id));
  out += " for";
  for (std::string_view pod : c.pods) out += " " + std::string(pod);
  if (c.extended_resource) out += " (extended resource)";
  return out;
}
}  // namespace

TEST_CASE("resource claims: an allocated claim's devices, node and pods are read") {
  WireDecoder decoder;
  std::vector<std::string> seen;
  const std::string unallocated =
      R"({"metadata":{"name":"pending","namespace":"train","uid":"c-2"},"spec":{"devices":{"requests":[]}},"status":{}})";
  const ListMeta meta = decoder.decode_list<ResourceClaimView>(
      R"({"kind":"ResourceClaimList","metadata":{"resourceVersion":"91"},"items":[)" + claim_json("dra-3") + "," + unallocated + "]}", kNoSchema,
      [&](const ResourceClaimView& c) { seen.push_back(describe(c)); });
  CHECK(meta.resource_version == "91");
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == "train/worker-0-gpus-x2v9q uid c-1 on dra-3: gpu.nvidia.com/dra-3/gpu-0 gpu.nvidia.com/dra-3/gpu-1#7f3a for p-0");
  CHECK(seen[1] == "train/pending uid c-2 on -: for");
}

TEST_CASE("resource claims: the scheduler's claim for a DRA extended resource is marked, with its owner pod") {
  WireDecoder decoder;
  ResourceClaimView claim;
  const std::string object =
      R"({"metadata":{"name":"job-0-extended-resources-abcde","namespace":"train","uid":"c-3","annotations":)"
      R"({"resource.kubernetes.io/extended-resource-claim":"true"},"ownerReferences":[{"kind":"Pod","name":"job-0","uid":"p-9"}]},)"
      R"("spec":{"devices":{"requests":[{"name":"container-0-request-0","exactly":{"deviceClassName":"gpu.example.com","count":1}}]}},)"
      R"("status":{"allocation":{"devices":{"results":[{"request":"container-0-request-0","driver":"gpu.nvidia.com",)"
      R"("pool":"n1","device":"gpu-7"}]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name",)"
      R"("operator":"In","values":["n1"]}]}]}}}})";
  const WatchEventHeader h = decoder.decode_event<ResourceClaimView>(R"({"type":"ADDED","object":)" + object + "}", kNoSchema, claim);
  CHECK(h.type == "ADDED");
  CHECK(describe(claim) == "train/job-0-extended-resources-abcde uid c-3 on n1: gpu.nvidia.com/n1/gpu-7 for p-9 (extended resource)");
}

TEST_CASE("resource claims: devices reachable from several nodes name no node") {
  WireDecoder decoder;
  ResourceClaimView claim;
  decoder.decode_event<ResourceClaimView>(
      R"({"type":"MODIFIED","object":{"metadata":{"name":"net","namespace":"a"},"status":{"allocation":{"devices":{"results":)"
      R"([{"request":"r","driver":"gpu.nvidia.com","pool":"fabric","device":"d0"}]},"nodeSelector":{"nodeSelectorTerms":)"
      R"([{"matchExpressions":[{"key":"rack","operator":"In","values":["r1"]}]}]}}}}})", kNoSchema,
      claim);
  CHECK(claim.node.empty());
  CHECK(claim.results.size() == 1);
}

TEST_CASE("resource claims: a malformed claim is refused with the path of its field") {
  WireDecoder decoder;
  ResourceClaimView claim;
  auto field_of = [&](const std::string& object) {
    try {
      decoder.decode_event<ResourceClaimView>(R"({"type":"ADDED","object":)" + object + "}", kNoSchema, claim);
    } catch (const DecodeError& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  CHECK(field_of(R"({"metadata":{"namespace":"a"}})").find("metadata.name") != std::string::npos);
  CHECK(field_of(R"({"metadata":{"name":"c"},"status":{"allocation":{"devices":{"results":[{"driver":"gpu.nvidia.com","pool":"p"}]}}}})")
            .find("status.allocation.devices.results[0].device") != std::string::npos);
  CHECK(field_of(R"({"metadata":{"name":"c"},"status":{"reservedFor":[{"resource":"pods","uid":7}]}})")
            .find("status.reservedFor[0].uid") != std::string::npos);
  CHECK(field_of(R"({"metadata":{"name":"c"},"status":{"allocation":{"devices":{"results":"gpu-0"}}}})")
            .find("status.allocation.devices.results") != std::string::npos);
}

TEST_CASE("resource claims: a claim's and a template's device requests, and a pod's claims") {
  WireDecoder decoder;
  std::vector<std::string> seen;
  decoder.decode_list<ResourceClaimView>(R"({"metadata":{},"items":[)" + claim_json("dra-3") + "]}", kNoSchema,
                                     [&](const ResourceClaimView& c) {
                                       for (const DraRequestView& r : c.requests)
                                         seen.push_back(std::string(r.device_class) + " x" + std::to_string(r.count));
                                     });
  CHECK(seen == std::vector<std::string>{"gpu.nvidia.com x2"});

  ResourceClaimTemplateView t;
  decoder.decode_event<ResourceClaimTemplateView>(
      R"({"type":"ADDED","object":{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":)"
      R"({"name":"two-h100","namespace":"train"},"spec":{"metadata":{"labels":{"a":"b"}},"spec":{"devices":{"requests":[)"
      R"({"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}},)"
      R"({"name":"all","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"All"}},)"
      R"({"name":"nic","exactly":{"deviceClassName":"nic.example.com"}},)"
      R"({"name":"either","firstAvailable":[{"name":"a","deviceClassName":"gpu.nvidia.com"}]},)"
      R"({"name":"slice","exactly":{"deviceClassName":"gpu.nvidia.com","capacity":{"requests":{"memory":"20Gi"}}}}]}}}}})", kNoSchema,
      t);
  CHECK(t.ns == "train");
  CHECK(t.name == "two-h100");
  REQUIRE(t.requests.size() == 5);
  CHECK((t.requests[0].count == 2 && !t.requests[0].all));
  CHECK(t.requests[1].all);
  CHECK((t.requests[2].device_class == "nic.example.com" && t.requests[2].count == 1));
  CHECK(t.requests[3].alternatives);
  CHECK((t.requests[4].share && !t.requests[0].share));  // a share of a device's capacity (KEP-5075)
  try {
    decoder.decode_event<ResourceClaimTemplateView>(
        R"({"type":"ADDED","object":{"metadata":{"name":"bad","namespace":"train"},"spec":{"spec":{"devices":{"requests":[)"
        R"({"name":"slice","exactly":{"deviceClassName":"gpu.nvidia.com","capacity":{"requests":{"memory":20}}}}]}}}}})", kNoSchema,
        t);
    FAIL("a capacity request that is no quantity was read");
  } catch (const DecodeError& e) {
    CHECK_THAT(e.what(), Catch::Contains("spec.spec.devices.requests[0].exactly.capacity.requests.memory"));
  }

  const ViewSchema schema;
  PodRequest pod = decoder.decode_pod_object(
      R"({"metadata":{"name":"w","namespace":"train"},"spec":{"containers":[{"name":"c","resources":{"claims":[{"name":"gpus"}]}}],)"
      R"("resourceClaims":[{"name":"gpus","resourceClaimTemplateName":"two-h100"},{"name":"shared","resourceClaimName":"pool"}]}})",
      schema);
  REQUIRE(pod.claims.size() == 2);
  CHECK(pod.claims[0].claim_template == "two-h100");
  CHECK(pod.claims[1].claim == "pool");
  CHECK_FALSE(pod.wants_gpus());  // its GPUs are in the claims: the cluster view counts them (claimed_gpus_of)
}

TEST_CASE("resource claims: adminAccess results and requests, and a request's device tolerations") {
  WireDecoder decoder;
  ResourceClaimView claim;
  // A monitoring claim (DCGM-style) over every GPU of node n1, with admin access, tolerating every taint.
  decoder.decode_event<ResourceClaimView>(
      R"({"type":"ADDED","object":{"metadata":{"name":"dcgm","namespace":"monitoring","uid":"c-9"},"spec":{"devices":)"
      R"({"requests":[{"name":"all","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"All","adminAccess":true,)"
      R"("tolerations":[{"operator":"Exists"},{"key":"gpu.nvidia.com/xid","operator":"Equal","value":"79","effect":"NoExecute",)"
      R"("tolerationSeconds":300}]}}]}},"status":{"allocation":{"devices":{"results":[{"request":"all","driver":"gpu.nvidia.com",)"
      R"("pool":"n1","device":"gpu-0","adminAccess":true},{"request":"all","driver":"gpu.nvidia.com","pool":"n1","device":"gpu-1",)"
      R"("adminAccess":null}]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In",)"
      R"("values":["n1"]}]}]}}}}})", kNoSchema,
      claim);
  REQUIRE(claim.results.size() == 2);
  CHECK(claim.results[0].admin_access);
  CHECK_FALSE(claim.results[1].admin_access);
  REQUIRE(claim.requests.size() == 1);
  CHECK(claim.requests[0].admin_access);
  CHECK(claim.requests[0].tolerations ==
        std::vector<DeviceToleration>{{"", "Exists", "", ""}, {"gpu.nvidia.com/xid", "Equal", "79", "NoExecute"}});
  auto field_of = [&](const std::string& exactly) {
    try {
      decoder.decode_event<ResourceClaimView>(
          R"({"type":"ADDED","object":{"metadata":{"name":"c","namespace":"a"},"spec":{"devices":{"requests":[{"name":"r",)"
          R"("exactly":)" + exactly + "}]}}}}", kNoSchema,
          claim);
    } catch (const DecodeError& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  CHECK(field_of(R"({"deviceClassName":"g","adminAccess":"yes"})").find("exactly.adminAccess") != std::string::npos);
  CHECK(field_of(R"({"deviceClassName":"g","tolerations":[{"key":1}]})").find("exactly.tolerations[0].key") != std::string::npos);
  CHECK(field_of(R"({"deviceClassName":"g","tolerations":"all"})").find("exactly.tolerations") != std::string::npos);
}
