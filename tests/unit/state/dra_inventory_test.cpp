// A node's GPUs from DRA ResourceSlices (dra_inventory.h), from slices shaped as NVIDIA's DRA driver
// (k8s-dra-driver-gpu) publishes them: whole GPUs "gpu-<minor>" with NVML's memory figure, GPUs in MIG
// mode as their MIG devices only, partitionable devices consuming a counter set, vfio passthrough
// devices, device taints, pools republished under a new generation. And the cluster view putting them
// in place of the node's labels and allocatable, whatever comes first.
#include <catch2/catch.hpp>

#include "dra_inventory_support.h"
#include "test_support.h"
#include "state/cluster_view_writes.h"

using namespace gpu_extender;
using namespace dra_inventory_support;

namespace {
std::shared_ptr<const CachedNode> find(const ClusterView& v, std::string_view name) {
  std::vector<std::shared_ptr<const CachedNode>> out;
  v.find_nodes({&name, 1}, out);
  return out[0];
}
int64_t gpu_count_of(const ClusterView& v, std::string_view node) {
  return find(v, node)->view().allocatable.get(ViewSchema::kGpuResource) / 1000;
}
}  // namespace

TEST_CASE("DRA inventory: devices of the schema's driver, named as GPU Feature Discovery names them") {
  ResourceSliceView view = slice_view("s", "n", {whole_gpu(0), whole_gpu(1)});
  const DraSlice kept_slice = DraSlice::of(view, kSchema);
  CHECK(kept_slice.node == "n");
  CHECK(kept_slice.of_driver);
  REQUIRE(kept_slice.devices.size() == 2);
  CHECK(kept_slice.devices[0].kind == DraDevice::Kind::kWholeGpu);
  CHECK(kept_slice.devices[0].physical == std::vector<std::string>{"pci:" + pci_of(0), "uuid:GPU-uuid-0"});
  view.driver = "net.example.com";
  CHECK_FALSE(DraSlice::of(view, kSchema).of_driver);
  CHECK(DraSlice::of(view, kSchema).devices.empty());
  CHECK(gfd_product_name("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3");
  CHECK(gfd_product_name("NVIDIA A100-SXM4-40GB (x)") == "NVIDIA-A100-SXM4-40GB-x");
  // go-nvlib's architecture names, as the driver publishes them, in GFD's family form (what pods ask).
  CHECK(gfd_family_name("Ada Lovelace") == "ada-lovelace");
  CHECK(gfd_family_name("Hopper") == "hopper");
  CHECK(gfd_family_name("Blackwell") == "blackwell");
}

TEST_CASE("DRA inventory: a node's slices give its GPU facts, in place of labels, whichever comes first") {
  ClusterView v;
  v.upsert<stored::ResourceSlices>(test_write(), h100s("s1", "dra-0", 4));  // before its node
  v.upsert<stored::Nodes>(test_write(), bare_node("dra-0"));
  auto node = find(v, "dra-0");
  REQUIRE(node);
  const NodeView& n = node->view();
  CHECK(n.gpus_from_dra);
  CHECK(n.gpu_model == std::optional<std::string_view>("NVIDIA-H100-80GB-HBM3"));
  CHECK(n.gpu_memory == std::optional<std::string_view>("81559"));  // NVML's figure, as published
  CHECK(n.gpu_count == std::optional<std::string_view>("4"));
  CHECK(n.gpu_family == std::optional<std::string_view>("hopper"));
  CHECK(n.allocatable.get(ViewSchema::kGpuResource) == 4000);

  // A second pool on the node (another driver instance's): 8 GPUs, the smaller memory.
  DraSlice second = h100s("s2", "dra-0", 4, 40960, 4);
  second.pool = "dra-0-b";
  v.upsert<stored::ResourceSlices>(test_write(), second);
  CHECK(find(v, "dra-0")->view().gpu_count == std::optional<std::string_view>("8"));
  CHECK(find(v, "dra-0")->view().gpu_memory == std::optional<std::string_view>("40960"));
  second.node = "dra-1";  // moved to another node
  v.upsert<stored::ResourceSlices>(test_write(), second);
  CHECK(find(v, "dra-0")->view().gpu_count == std::optional<std::string_view>("4"));
  v.erase<stored::ResourceSlices>(test_write(), "s1");  // no slice left: the node as listed again
  CHECK_FALSE(find(v, "dra-0")->view().gpus_from_dra);
  CHECK_FALSE(find(v, "dra-0")->view().allocatable.has(ViewSchema::kGpuResource));

  // A relist of slices replaces them all; a node re-listed keeps its slices' GPUs.
  v.replace<stored::ResourceSlices>(test_write(), {h100s("s3", "dra-0", 2)});
  CHECK_FALSE(find(v, "dra-1"));  // its slice is gone and it was never listed: no entry
  v.upsert<stored::Nodes>(test_write(), bare_node("dra-0"));
  CHECK(find(v, "dra-0")->view().gpu_count == std::optional<std::string_view>("2"));
  v.erase<stored::Nodes>(test_write(), "dra-0");
  CHECK_FALSE(find(v, "dra-0"));
  CHECK(v.stats().node_entries == 1);  // its slice is still there, waiting for the node
  v.erase<stored::ResourceSlices>(test_write(), "s3");
  CHECK(v.stats().node_entries == 0);
}

TEST_CASE("DRA inventory: a GPU in MIG mode is one GPU in use, held only by its MIG claims") {
  // 4 whole A100s and 4 in MIG mode (7 1g.10gb devices each), as the driver publishes such a node.
  std::vector<DraDeviceView> devices;
  for (int i = 0; i < 4; ++i) devices.push_back(whole_gpu(i, "NVIDIA A100-SXM4-80GB", "Ampere", 81920));
  for (int i = 4; i < 8; ++i)
    for (int start = 0; start < 7; ++start) devices.push_back(mig_device(i, start));
  ClusterView v;
  v.upsert<stored::Nodes>(test_write(), bare_node("mixed"));
  v.upsert<stored::ResourceSlices>(test_write(), slice_of("s", "mixed", devices));
  CHECK(gpu_count_of(v, "mixed") == 8);                 // physical GPUs, not 4 + 28 devices
  CHECK(test_support::gpus_on(v, "mixed") == 4);        // the MIG-mode parents are not free for whole-GPU pods
  CHECK(find(v, "mixed")->view().gpu_memory == std::optional<std::string_view>("81920"));  // of the whole ones
  // Seven MIG claims on one parent: still that one GPU, so a 4-GPU pod has its 4 free GPUs.
  for (int start = 0; start < 7; ++start)
    v.upsert<stored::ResourceClaims>(test_write(), claim_of("ml/mig-" + std::to_string(start), "mixed",
                            {"gpu-4-mig-1g10gb-19-" + std::to_string(start)}));
  CHECK(test_support::gpus_on(v, "mixed") == 4);
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("ml/whole", "mixed", {"gpu-0"}));
  CHECK(test_support::gpus_on(v, "mixed") == 5);
  const auto dra = v.dra_node("mixed");
  REQUIRE(dra);
  CHECK(dra->gpus.size() == 8);
  CHECK(dra->gpus[4] == "mixed/gpu-4");  // a MIG-mode GPU named by its parent's minor
  REQUIRE(dra->unavailable.size() == 3);  // gpu-4 is held by its MIG claims; 5, 6, 7 are in MIG mode
  CHECK(dra->unavailable[0].first == "mixed/gpu-5");
  CHECK(dra->unavailable[0].second.find("in MIG mode") != std::string::npos);
  CHECK(v.dra_stats().unavailable_gpus == 3);
  CHECK(v.dra_stats().held_gpus == 2);
}

TEST_CASE("DRA inventory: partitionable devices sharing a GPU's counter set are one GPU") {
  // DynamicMIG: the pool's counter sets in a slice of their own, the GPU and its partitions consuming them.
  DraDeviceView gpu0 = whole_gpu(0, "NVIDIA A100-SXM4-80GB", "Ampere", 81920);
  gpu0.pci_bus_id.reset();  // nothing but the counter set ties them
  gpu0.uuid.reset();
  gpu0.counter_sets = {"gpu-0-counter-set"};
  DraDeviceView part = mig_device(0, 0);
  part.pci_bus_id.reset();
  part.parent_uuid.reset();
  part.counter_sets = {"gpu-0-counter-set"};
  DraDeviceView gpu1 = whole_gpu(1, "NVIDIA A100-SXM4-80GB", "Ampere", 81920);
  gpu1.counter_sets = {"gpu-1-counter-set"};
  ClusterView v;
  v.upsert<stored::Nodes>(test_write(), bare_node("p"));
  v.upsert<stored::ResourceSlices>(test_write(), slice_of("p-devices", "p", {gpu0, part, gpu1}, 1, 2));
  // Half the pool listed: the allocator allocates nothing from it, so neither does the extender count it free.
  CHECK(gpu_count_of(v, "p") == 2);
  CHECK(test_support::gpus_on(v, "p") == 2);
  REQUIRE(v.dra_node("p"));
  CHECK(v.dra_node("p")->unavailable[0].second.find("republished") != std::string::npos);
  v.upsert<stored::ResourceSlices>(test_write(), slice_of("p-counters", "p", {}, 1, 2));  // the counters' slice: the pool is whole
  CHECK(test_support::gpus_on(v, "p") == 0);
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("ml/part", "p", {"gpu-0-mig-1g10gb-19-0"}));
  CHECK(test_support::gpus_on(v, "p") == 1);  // the partition holds gpu-0
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("ml/gpu-0", "p", {"gpu-0"}));
  CHECK(test_support::gpus_on(v, "p") == 1);  // the same GPU, once
}

TEST_CASE("DRA inventory: a vfio passthrough device is its GPU, not another") {
  const DraDeviceView vfio = device("gpu-vfio-0", "vfio", pci_of(0));
  const DraDeviceView stray = device("nic-0", "nic");  // of the driver, naming no GPU: not a GPU
  ClusterView v;
  v.upsert<stored::Nodes>(test_write(), bare_node("vm-host"));
  v.upsert<stored::ResourceSlices>(test_write(), slice_of("s", "vm-host", {whole_gpu(0), vfio, whole_gpu(1), stray}));
  CHECK(gpu_count_of(v, "vm-host") == 2);
  CHECK(test_support::gpus_on(v, "vm-host") == 0);
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("vm/passthrough", "vm-host", {"gpu-vfio-0"}));
  CHECK(test_support::gpus_on(v, "vm-host") == 1);
  v.upsert<stored::ResourceClaims>(test_write(), claim_of("ml/gpu-0", "vm-host", {"gpu-0"}));
  CHECK(test_support::gpus_on(v, "vm-host") == 1);
  // A GPU bound to vfio-pci only (no whole device): one GPU, not free for whole-GPU pods, held once.
  v.erase<stored::ResourceClaims>(test_write(), "ml/gpu-0");
  v.upsert<stored::ResourceSlices>(test_write(), slice_of("s", "vm-host", {whole_gpu(1), vfio}));
  CHECK(gpu_count_of(v, "vm-host") == 2);
  CHECK(test_support::gpus_on(v, "vm-host") == 1);
  v.erase<stored::ResourceClaims>(test_write(), "vm/passthrough");
  CHECK(test_support::gpus_on(v, "vm-host") == 1);
}

TEST_CASE("DRA inventory: tainted GPUs are in use unless the pod's claims tolerate the taint") {
  DraDeviceView sick = whole_gpu(7);
  sick.taints = {{"gpu.nvidia.com/xid", "79", "NoSchedule"}};
  DraDeviceView noted = whole_gpu(6);
  noted.taints = {{"gpu.nvidia.com/info", "", "None"}};  // informs only
  std::vector<DraDeviceView> devices;
  for (int i = 0; i < 6; ++i) devices.push_back(whole_gpu(i));
  devices.push_back(noted);
  devices.push_back(sick);
  const DraSlice slice = slice_of("s", "h", devices);
  CHECK(slice.devices[6].taints.empty());  // a taint that does not prevent allocation is not kept
  ClusterView v;
  v.upsert<stored::Nodes>(test_write(), bare_node("h"));
  v.upsert<stored::ResourceSlices>(test_write(), slice);
  CHECK(gpu_count_of(v, "h") == 8);
  CHECK(test_support::gpus_on(v, "h") == 1);  // 7 usable
  const NodeView& n = find(v, "h")->view();
  REQUIRE(n.dra_tainted_gpus.size() == 1);
  CHECK(n.dra_tainted_gpus[0] == std::vector<DeviceTaint>{{"gpu.nvidia.com/xid", "79", "NoSchedule"}});
  REQUIRE(v.dra_node("h"));
  CHECK(v.dra_node("h")->unavailable ==
        std::vector<std::pair<std::string, std::string>>{{"h/gpu-7", "tainted gpu.nvidia.com/xid=79:NoSchedule"}});

  // Tolerations as the allocator matches them.
  const std::vector<DeviceTaint>& taints = n.dra_tainted_gpus[0];
  CHECK(tolerates_all({{"gpu.nvidia.com/xid", "Exists", "", ""}}, taints));
  CHECK(tolerates_all({{"gpu.nvidia.com/xid", "Equal", "79", "NoSchedule"}}, taints));
  CHECK(tolerates_all({{"", "Exists", "", ""}}, taints));  // every taint
  CHECK_FALSE(tolerates_all({{"gpu.nvidia.com/xid", "Equal", "48", ""}}, taints));
  CHECK_FALSE(tolerates_all({{"gpu.nvidia.com/xid", "Exists", "", "NoExecute"}}, taints));
  CHECK_FALSE(tolerates_all({}, taints));

  // A claim's tolerations reach the pod that uses it.
  ResourceClaimView claim;
  claim.ns = "ops";
  claim.name = "burn-in";
  claim.requests = {request("gpu.nvidia.com")};
  claim.requests[0].tolerations = {{"gpu.nvidia.com/xid", "Exists", "", "NoSchedule"}};
  v.upsert<stored::ResourceClaims>(test_write(), DraClaim::of(claim, kSchema));
  PodRequest pod;
  pod.ns = "ops";
  pod.claims = {{"burn-in", ""}};
  std::vector<DeviceToleration> tolerations;
  CHECK(v.claimed_gpus_of(pod, &tolerations) == 1);
  CHECK(tolerations == std::vector<DeviceToleration>{{"gpu.nvidia.com/xid", "Exists", "", "NoSchedule"}});
}

namespace {
DeviceTaintRuleView rule_view(std::string_view name, std::optional<std::string_view> pool,
                              std::optional<std::string_view> device, std::string_view effect = "NoSchedule",
                              std::optional<std::string_view> driver = "gpu.nvidia.com", bool has_selector = true) {
  DeviceTaintRuleView r;
  r.name = name;
  r.has_selector = has_selector;
  r.driver = driver;
  r.pool = pool;
  r.device = device;
  r.taint = {"example.com/drain", "", std::string(effect)};
  return r;
}
}  // namespace

TEST_CASE("DRA inventory: a DeviceTaintRule taints the devices it selects, on every node, as their slices' taints do") {
  ClusterView v;
  for (const char* node : {"a", "b"}) {
    v.upsert<stored::Nodes>(test_write(), bare_node(node));
    v.upsert<stored::ResourceSlices>(test_write(), h100s(std::string(node) + "-s", node, 8));
  }
  CHECK(test_support::gpus_on(v, "a") == 0);
  // One device of one pool.
  v.upsert<stored::DeviceTaintRules>(test_write(), DraTaintRule::of(rule_view("drain-a3", "a", "gpu-3"), kSchema));
  CHECK(test_support::gpus_on(v, "a") == 1);
  CHECK(test_support::gpus_on(v, "b") == 0);
  REQUIRE(v.dra_node("a"));
  CHECK(v.dra_node("a")->unavailable ==
        std::vector<std::pair<std::string, std::string>>{{"a/gpu-3", "tainted example.com/drain:NoSchedule"}});
  // A pool: all its GPUs; an empty selector: every device of every pool.
  v.upsert<stored::DeviceTaintRules>(test_write(), DraTaintRule::of(rule_view("drain-b", "b", std::nullopt, "NoExecute"), kSchema));
  CHECK(test_support::gpus_on(v, "b") == 8);
  v.erase<stored::DeviceTaintRules>(test_write(), "drain-b");
  CHECK(test_support::gpus_on(v, "b") == 0);
  v.upsert<stored::DeviceTaintRules>(test_write(), DraTaintRule::of(rule_view("all", std::nullopt, std::nullopt, "NoSchedule", std::nullopt), kSchema));
  CHECK(test_support::gpus_on(v, "b") == 8);
  // The same rule changed to inform only ("None"), or to another driver's devices, or with no selector at
  // all (which selects nothing): no GPU is kept from claims by it.
  v.upsert<stored::DeviceTaintRules>(test_write(), DraTaintRule::of(rule_view("all", std::nullopt, std::nullopt, "None", std::nullopt), kSchema));
  CHECK(test_support::gpus_on(v, "b") == 0);
  v.upsert<stored::DeviceTaintRules>(test_write(), DraTaintRule::of(rule_view("all", std::nullopt, std::nullopt, "NoSchedule", "nic.example.com"), kSchema));
  CHECK(test_support::gpus_on(v, "b") == 0);
  v.upsert<stored::DeviceTaintRules>(test_write(), DraTaintRule::of(rule_view("all", std::nullopt, std::nullopt, "NoSchedule", std::nullopt, false), kSchema));
  CHECK(test_support::gpus_on(v, "b") == 0);
  CHECK(test_support::gpus_on(v, "a") == 1);  // drain-a3 still holds
  // A slice published after the rule carries its taint too; a relist of rules that no longer names it frees it.
  v.upsert<stored::Nodes>(test_write(), bare_node("c"));
  v.upsert<stored::ResourceSlices>(test_write(), h100s("c-s", "c", 8));
  v.upsert<stored::DeviceTaintRules>(test_write(), DraTaintRule::of(rule_view("drain-c", "c", std::nullopt), kSchema));
  v.upsert<stored::ResourceSlices>(test_write(), h100s("c-s", "c", 8));
  CHECK(test_support::gpus_on(v, "c") == 8);
  v.replace<stored::DeviceTaintRules>(test_write(), {DraTaintRule::of(rule_view("drain-a3", "a", "gpu-3"), kSchema)});
  CHECK(test_support::gpus_on(v, "c") == 0);
  CHECK(test_support::gpus_on(v, "a") == 1);
  v.replace<stored::DeviceTaintRules>(test_write(), {});
  CHECK(test_support::gpus_on(v, "a") == 0);
}

TEST_CASE("DRA inventory: only a pool's newest generation counts") {
  ClusterView v;
  v.upsert<stored::Nodes>(test_write(), bare_node("r"));
  v.upsert<stored::ResourceSlices>(test_write(), h100s("r-gen1", "r", 8));
  DraSlice newer = h100s("r-gen2", "r", 8);
  newer.generation = 2;
  v.upsert<stored::ResourceSlices>(test_write(), newer);  // republished: the old slice is still listed until the driver deletes it
  CHECK(gpu_count_of(v, "r") == 8);
  CHECK(test_support::gpus_on(v, "r") == 0);
  CHECK(v.dra_stats().gpus == 8);
  // A newest generation split in two slices, one listed so far: none of it is allocatable yet.
  DraSlice half = h100s("r-gen3-a", "r", 4);
  half.generation = 3;
  half.pool_slices = 2;
  v.upsert<stored::ResourceSlices>(test_write(), half);
  CHECK(gpu_count_of(v, "r") == 4);
  CHECK(test_support::gpus_on(v, "r") == 4);
  DraSlice other_half = h100s("r-gen3-b", "r", 4, 81559, 4);
  other_half.generation = 3;
  other_half.pool_slices = 2;
  v.upsert<stored::ResourceSlices>(test_write(), other_half);
  CHECK(gpu_count_of(v, "r") == 8);
  CHECK(test_support::gpus_on(v, "r") == 0);
}
