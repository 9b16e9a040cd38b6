// Allocated ResourceClaims in the cluster view: the devices they hold counted once, a partition holding
// its parent GPU, adminAccess holding and asking nothing, the pod a claim serves counting its devices in
// place of its GPU request, and the GPUs a pod asks through its claims and templates.
#include <catch2/catch.hpp>

#include "dra_inventory_support.h"
#include "test_support.h"
#include "state/cluster_view_writes.h"

using namespace gpu_extender;
using namespace dra_inventory_support;

namespace {
DraResultView result(std::string_view device, bool admin_access = false) {
  DraResultView r;
  r.driver = "gpu.nvidia.com";
  r.pool = "dra-0";
  r.device = device;
  r.admin_access = admin_access;
  return r;
}
}  // namespace

TEST_CASE("DRA claims: a held GPU counts once, a partition occupies its parent, a claim may come first") {
  ClusterView v;
  v.upsert<stored::Nodes>(test_write(), bare_node("dra-0"));
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("a/early", "dra-0", {"gpu-0"}));  // before the slices: named as itself
  CHECK(test_support::gpus_on(v, "dra-0") == 1);
  v.upsert<stored::ResourceSlices>(test_write(), slice_of("s1", "dra-0", {whole_gpu(0), whole_gpu(1), mig_device(1, 0), mig_device(1, 1)}));
  CHECK(test_support::gpus_on(v, "dra-0") == 1);
  // Two partitions of gpu-1 held by two claims: gpu-1 is occupied, once.
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("a/mig-0", "dra-0", {"gpu-1-mig-1g10gb-19-0"}));
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("a/mig-1", "dra-0", {"gpu-1-mig-1g10gb-19-1"}));
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.erase<stored::ResourceClaims>(test_write(), "a/mig-0");
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.erase<stored::ResourceClaims>(test_write(), "a/mig-1");
  CHECK(test_support::gpus_on(v, "dra-0") == 1);
  // Unallocated (no node) or of another driver (no devices kept): nothing held.
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("a/pending", "", {"gpu-1"}));
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("a/nic", "dra-0", {}));
  CHECK(test_support::gpus_on(v, "dra-0") == 1);
  const DraStats stats = v.dra_stats();
  CHECK(stats.claims == 1);
  CHECK(stats.held_gpus == 1);
  CHECK(stats.gpus == 2);
  const auto node = v.dra_node("dra-0");
  REQUIRE(node);
  CHECK(node->held == std::vector<std::pair<std::string, std::string>>{{"dra-0/gpu-0", "a/early"}});
}

TEST_CASE("DRA claims: results with adminAccess hold nothing, requests with it ask nothing") {
  // A monitoring claim over every GPU of the node, as DCGM-style tools claim devices.
  ResourceClaimView monitor;
  monitor.ns = "monitoring";
  monitor.name = "dcgm";
  monitor.node = "dra-0";
  for (const char* device : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"})
    monitor.results.push_back(result(device, true));
  monitor.requests = {request("gpu.nvidia.com")};
  monitor.requests[0].all = monitor.requests[0].admin_access = true;
  const DraClaim claim = DraClaim::of(monitor, kSchema);
  CHECK(claim.devices.empty());
  CHECK(claim.requested_gpus == 0);
  ClusterView v;
  v.upsert<stored::Nodes>(test_write(), bare_node("dra-0"));
  v.upsert<stored::ResourceSlices>(test_write(), h100s("s", "dra-0", 4));
  v.upsert<stored::ResourceClaims>(test_write(), claim);
  CHECK(test_support::gpus_on(v, "dra-0") == 0);
  // Beside it, an ordinary claim on gpu-0 holds gpu-0.
  ResourceClaimView train = monitor;
  train.name = "train";
  train.results = {result("gpu-0")};
  train.requests = {request("gpu.nvidia.com")};
  v.upsert<stored::ResourceClaims>(test_write(), DraClaim::of(train, kSchema));
  CHECK(test_support::gpus_on(v, "dra-0") == 1);
}

TEST_CASE("DRA claims: the pod a claim serves counts its devices, not its GPU request, whichever comes first") {
  ClusterView v;
  v.upsert<stored::Nodes>(test_write(), bare_node("dra-0"));
  v.upsert<stored::ResourceSlices>(test_write(), h100s("s1", "dra-0", 8));
  const PodRequest pod = test_support::watched_pod("uid-ext", "dra-0", 2);
  v.upsert_pod(test_write(), pod);
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("a/ext", "dra-0", {"gpu-0", "gpu-1"}, {"uid-ext"}));
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.delete_pod(test_write(), "uid-ext");  // the pod is gone before its claim
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.erase<stored::ResourceClaims>(test_write(), "a/ext");
  CHECK(test_support::gpus_on(v, "dra-0") == 0);
  // The claim first, then the pod (a relist of pods after the claims).
  v.replace<stored::ResourceClaims>(test_write(), {claim_of("a/ext", "dra-0", {"gpu-0", "gpu-1"}, {"uid-ext"})});
  v.replace_pods(test_write(), {{"uid-ext", "dra-0", pod.requests, nullptr, ""}});
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.replace<stored::ResourceClaims>(test_write(), {});
  CHECK(test_support::gpus_on(v, "dra-0") == 2);  // the pod's own request counts again
}

TEST_CASE("DRA claims: the GPUs a pod asks through its claims, by claim or by template, in its namespace") {
  ClusterView v;
  DraClaim by_template = claim_of("train/two-h100", "", {});
  by_template.requested_gpus = 2;
  v.upsert<stored::ResourceClaimTemplates>(test_write(), by_template);
  DraClaim shared = claim_of("train/pool", "", {});
  shared.requested_gpus = 4;
  v.upsert<stored::ResourceClaims>(test_write(), shared);  // not allocated yet: asks, holds nothing
  PodRequest pod;
  pod.ns = "train";
  pod.claims = {{"", "two-h100"}, {"pool", ""}, {"unknown", ""}};
  CHECK(v.claimed_gpus_of(pod) == 6);
  CHECK(test_support::gpus_on(v, "dra-0") == 0);
  pod.ns = "other";
  CHECK(v.claimed_gpus_of(pod) == 0);
  pod.ns = "train";
  v.erase<stored::ResourceClaimTemplates>(test_write(), "train/two-h100");
  v.replace<stored::ResourceClaims>(test_write(), {});
  CHECK(v.claimed_gpus_of(pod) == 0);

  // What DraClaim::of counts: requests of a GPU class, not All, alternatives or a share of a device.
  ResourceClaimView view;
  view.ns = "train";
  view.name = "t";
  view.requests = {request("gpu.nvidia.com", 2), request("gpu.nvidia.com"), request("nic.example.com"),
                   request("gpu.nvidia.com"), request("gpu.nvidia.com")};
  view.requests[1].all = true;
  view.requests[3].alternatives = true;
  view.requests[4].share = true;
  CHECK(DraClaim::of(view, ViewSchema{}).requested_gpus == 2);
}
