// A node's GPUs from DRA ResourceSlices (dra_inventory.h): what a slice of NVIDIA's driver gives, and the
// cluster view putting them in place of the node's labels and allocatable, whatever comes first.
#include <catch2/catch.hpp>

#include "../test_support.h"
#include "gpu_extender/kube/cluster_view.h"

using namespace gpu_extender;

namespace {
DraSlice h100s(const std::string& name, const std::string& node, int gpus, int64_t gib = 80) {
  DraSlice s{name, node, node, {}, {}};
  for (int i = 0; i < gpus; ++i) s.gpus.push_back({"gpu-" + std::to_string(i), "", "NVIDIA H100 80GB HBM3", "Hopper", gib << 30});
  return s;
}
NodeView bare_node(std::string_view name) {  // a DRA node: no GPU labels, no nvidia.com/gpu allocatable
  NodeView n;
  n.name = name;
  return n;
}
std::shared_ptr<const CachedNode> find(const ClusterView& v, std::string_view name) {
  std::vector<std::shared_ptr<const CachedNode>> out;
  v.find_nodes({&name, 1}, out);
  return out[0];
}
}  // namespace

TEST_CASE("DRA inventory: only whole GPUs of the schema's driver count, named as GPU Feature Discovery names them") {
  const ViewSchema schema;
  ResourceSliceView slice;
  slice.name = "s";
  slice.node_name = "n";
  slice.driver = "gpu.nvidia.com";
  slice.devices = {{"gpu-0", "NVIDIA H100 80GB HBM3", "Hopper", "gpu", int64_t{80} << 30, std::nullopt, std::nullopt},
                   {"gpu-0-mig", "NVIDIA H100 80GB HBM3", std::nullopt, "mig", int64_t{10} << 30, std::nullopt, std::nullopt},
                   {"gpu-1", "NVIDIA H100 80GB HBM3", "Hopper", std::nullopt, int64_t{80} << 30, std::nullopt, std::nullopt}};
  const DraSlice kept = DraSlice::of(slice, schema);
  CHECK(kept.node == "n");
  CHECK(kept.gpus.size() == 2);
  slice.driver = "net.example.com";
  CHECK(DraSlice::of(slice, schema).gpus.empty());
  CHECK(gfd_product_name("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3");
  CHECK(gfd_product_name("NVIDIA A100-SXM4-40GB (x)") == "NVIDIA-A100-SXM4-40GB-x");
}

TEST_CASE("DRA inventory: a node's slices give its GPU facts, in place of labels, whichever comes first") {
  ClusterView v;
  v.upsert_slice(h100s("s1", "dra-0", 4));  // before its node
  v.upsert_node(bare_node("dra-0"));
  auto node = find(v, "dra-0");
  REQUIRE(node);
  const NodeView& n = node->view();
  CHECK(n.gpus_from_dra);
  CHECK(n.gpu_model == std::optional<std::string_view>("NVIDIA-H100-80GB-HBM3"));
  CHECK(n.gpu_memory == std::optional<std::string_view>("81920"));
  CHECK(n.gpu_count == std::optional<std::string_view>("4"));
  CHECK(n.gpu_family == std::optional<std::string_view>("hopper"));
  CHECK(n.allocatable.get(ViewSchema::kGpuResource) == 4000);

  v.upsert_slice(h100s("s2", "dra-0", 4, 40));  // a second pool: 8 GPUs, the smaller memory
  CHECK(find(v, "dra-0")->view().gpu_count == std::optional<std::string_view>("8"));
  CHECK(find(v, "dra-0")->view().gpu_memory == std::optional<std::string_view>("40960"));
  v.upsert_slice(h100s("s2", "dra-1", 4));  // moved to another node
  CHECK(find(v, "dra-0")->view().gpu_count == std::optional<std::string_view>("4"));
  v.delete_slice("s1");  // no slice left: the node as listed again
  CHECK_FALSE(find(v, "dra-0")->view().gpus_from_dra);
  CHECK_FALSE(find(v, "dra-0")->view().allocatable.has(ViewSchema::kGpuResource));

  // A relist of slices replaces them all; a node re-listed keeps its slices' GPUs.
  v.replace_slices({h100s("s3", "dra-0", 2)});
  CHECK_FALSE(find(v, "dra-1"));  // its slice is gone and it was never listed: no entry
  v.upsert_node(bare_node("dra-0"));
  CHECK(find(v, "dra-0")->view().gpu_count == std::optional<std::string_view>("2"));
  v.delete_node("dra-0");
  CHECK_FALSE(find(v, "dra-0"));
  CHECK(v.stats().node_entries == 1);  // its slice is still there, waiting for the node
  v.delete_slice("s3");
  CHECK(v.stats().node_entries == 0);
}

namespace {
DraClaim claim_of(const std::string& key, const std::string& node, std::vector<std::string> devices,
                  std::vector<std::string> pods = {}) {
  DraClaim c{key, node, {}, std::move(pods)};
  for (auto& d : devices) c.devices.push_back({node, std::move(d)});
  return c;
}
}  // namespace

TEST_CASE("DRA claims: a held GPU counts once, a partition occupies its parent, a claim may come first") {
  ClusterView v;
  v.upsert_node(bare_node("dra-0"));
  v.upsert_claim(claim_of("a/early", "dra-0", {"gpu-0"}));  // before the slices: named as itself
  CHECK(test_support::gpus_on(v, "dra-0") == 1);
  DraSlice slice = h100s("s1", "dra-0", 2);
  slice.gpus[0].uuid = "GPU-aaa";
  slice.gpus[1].uuid = "GPU-bbb";
  slice.partitions = {{"gpu-1-mig-1g.10gb-0", "GPU-bbb"}, {"gpu-1-mig-1g.10gb-1", "GPU-bbb"}};
  v.upsert_slice(slice);
  CHECK(test_support::gpus_on(v, "dra-0") == 1);
  // Two partitions of gpu-1 held by two claims: gpu-1 is occupied, once.
  v.upsert_claim(claim_of("a/mig-0", "dra-0", {"gpu-1-mig-1g.10gb-0"}));
  v.upsert_claim(claim_of("a/mig-1", "dra-0", {"gpu-1-mig-1g.10gb-1"}));
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.delete_claim("a/mig-0");
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.delete_claim("a/mig-1");
  CHECK(test_support::gpus_on(v, "dra-0") == 1);
  // Unallocated (no node) or of another driver (no devices kept): nothing held.
  v.upsert_claim(claim_of("a/pending", "", {"gpu-1"}));
  v.upsert_claim(DraClaim{"a/nic", "dra-0", {}, {}});
  CHECK(test_support::gpus_on(v, "dra-0") == 1);
  const ClusterView::DraStats stats = v.dra_stats();
  CHECK(stats.claims == 1);
  CHECK(stats.held_gpus == 1);
  CHECK(stats.gpus == 2);
  const auto node = v.dra_node("dra-0");
  REQUIRE(node);
  CHECK(node->held == std::vector<std::pair<std::string, std::string>>{{"dra-0/gpu-0", "a/early"}});
}

TEST_CASE("DRA claims: the pod a claim serves counts its devices, not its GPU request, whichever comes first") {
  ClusterView v;
  v.upsert_node(bare_node("dra-0"));
  v.upsert_slice(h100s("s1", "dra-0", 8));
  const PodRequest pod = test_support::watched_pod("uid-ext", "dra-0", 2);
  v.upsert_pod(pod);
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.upsert_claim(claim_of("a/ext", "dra-0", {"gpu-0", "gpu-1"}, {"uid-ext"}));
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.delete_pod("uid-ext");  // the pod is gone before its claim
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.delete_claim("a/ext");
  CHECK(test_support::gpus_on(v, "dra-0") == 0);
  // The claim first, then the pod (a relist of pods after the claims).
  v.replace_claims({claim_of("a/ext", "dra-0", {"gpu-0", "gpu-1"}, {"uid-ext"})});
  v.replace_pods({{"uid-ext", "dra-0", pod.requests, nullptr, ""}});
  CHECK(test_support::gpus_on(v, "dra-0") == 2);
  v.replace_claims({});
  CHECK(test_support::gpus_on(v, "dra-0") == 2);  // the pod's own request counts again
}

TEST_CASE("DRA claims: the GPUs a pod asks through its claims, by claim or by template, in its namespace") {
  ClusterView v;
  DraClaim by_template{"train/two-h100", "", {}, {}};
  by_template.requested_gpus = 2;
  v.upsert_claim_template(by_template);
  DraClaim shared{"train/pool", "", {}, {}};
  shared.requested_gpus = 4;
  v.upsert_claim(shared);  // not allocated yet: asks, holds nothing
  PodRequest pod;
  pod.ns = "train";
  pod.claims = {{"", "two-h100"}, {"pool", ""}, {"unknown", ""}};
  CHECK(v.claimed_gpus_of(pod) == 6);
  CHECK(test_support::gpus_on(v, "dra-0") == 0);
  pod.ns = "other";
  CHECK(v.claimed_gpus_of(pod) == 0);
  pod.ns = "train";
  v.delete_claim_template("train/two-h100");
  v.replace_claims({});
  CHECK(v.claimed_gpus_of(pod) == 0);

  // What DraClaim::of counts: requests of a GPU class, not All, alternatives or a share of a device.
  ResourceClaimView view;
  view.ns = "train";
  view.name = "t";
  view.requests = {{"gpu.nvidia.com", 2, false, false, false}, {"gpu.nvidia.com", 1, true, false, false},
                   {"nic.example.com", 1, false, false, false}, {"gpu.nvidia.com", 1, false, true, false},
                   {"gpu.nvidia.com", 1, false, false, true}};
  CHECK(DraClaim::of(view, ViewSchema{}).requested_gpus == 2);
}
