// MIG in the mixed strategy: each profile a resource of its own (resources.mig in the policy), judged
// against GPU Feature Discovery's <resource>.count and <resource>.memory labels.
#include <catch2/catch.hpp>

#include "gpu_extender/state/node_source.h"
#include "rule_support.h"

using namespace gpu_extender;
using rule_support::check;

namespace {

const PolicyConfig& mig_config() {
  static const PolicyConfig c =
      parse_policy("resources:\n  mig: [nvidia.com/mig-1g.5gb, nvidia.com/mig-2g.10gb]\n", "mig.yaml");
  return c;
}
size_t profile_resource(size_t profile) { return mig_config().schema.mig_resource(profile); }

// An A100 cut into 1g.5gb and 2g.10gb slices, as GFD labels it and the device plugin reports it.
NodeView mixed_node(std::string_view name, int small_slices, int large_slices) {
  NodeView n;
  n.name = name;
  n.gpu_model = "NVIDIA-A100-SXM4-40GB";
  n.gpu_memory = "40960";
  n.allocatable.set(ViewSchema::kGpuResource, 0);
  n.mig_count[0] = "3";
  n.mig_memory[0] = "4864";
  n.mig_count[1] = "2";
  n.mig_memory[1] = "9984";
  n.allocatable.set(profile_resource(0), small_slices * 1000LL);
  n.allocatable.set(profile_resource(1), large_slices * 1000LL);
  return n;
}

PodRequest slice_pod(size_t profile, int slices, std::optional<int64_t> memory_mib = std::nullopt) {
  PodRequest p = test_support::gpu_pod(0, std::nullopt, memory_mib);
  p.requests.set(profile_resource(profile), slices * 1000LL);
  return p;
}

}  // namespace

TEST_CASE("mig: resources.mig lists profiles after the excluded resources, labels named after them") {
  const ViewSchema& s = mig_config().schema;
  REQUIRE(s.mig_profiles() == 2);
  CHECK(s.first_mig_resource() == ViewSchema::kFirstExcludedResource + 1);  // after bbb
  CHECK(s.resources.name(s.mig_resource(1)) == "nvidia.com/mig-2g.10gb");
  CHECK(s.mig_count_labels[0] == "nvidia.com/mig-1g.5gb.count");
  CHECK(s.mig_memory_labels[1] == "nvidia.com/mig-2g.10gb.memory");
  CHECK(default_policy_config().schema.mig_profiles() == 0);

  auto error_of = [](const std::string& text) {
    try {
      parse_policy(text, "p.yaml");
    } catch (const PolicyError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error_of("resources: {mig: [a, b, c, d, e, f, g]}").find("resources.mig") != std::string::npos);
  CHECK(error_of("resources: {mig: [custom.resource/bbb]}").find("named twice") != std::string::npos);
}

TEST_CASE("mig: gpuCount counts the profile's slices, whole GPUs are not asked for") {
  auto p = rules::make_gpu_count_predicate(mig_config());
  const NodeView n = mixed_node("mixed", 3, 2);
  CHECK(check(*p, slice_pod(1, 2), n).fit == Fit::kPass);
  const auto too_many = check(*p, slice_pod(1, 3), n);
  CHECK(too_many.fit == Fit::kUnresolvable);
  CHECK(too_many.reason == "node has 2 nvidia.com/mig-2g.10gb slices; pod requests 3");
  // Busy slices can be freed by preemption.
  ResourceAmounts used;
  used.set(profile_resource(0), 2000);
  const auto busy = check(*p, slice_pod(0, 2), n, used);
  CHECK(busy.fit == Fit::kResolvable);
  CHECK(busy.reason == "only 1 of 3 nvidia.com/mig-1g.5gb slices free; pod requests 2");
  // A node without the profile, and a whole-GPU node, offer none.
  const NodeView whole = test_support::gpu_node("whole", "NVIDIA-A100-SXM4-40GB", "40960", 8);
  CHECK(check(*p, slice_pod(0, 1), whole).reason == "node offers no nvidia.com/mig-1g.5gb; pod requests 1");
  // Without the resource in the node's status, the count label stands in.
  NodeView labelled = mixed_node("labelled", 0, 0);
  labelled.allocatable = {};
  CHECK(check(*p, slice_pod(0, 3), labelled).fit == Fit::kPass);
  CHECK(check(*p, slice_pod(0, 4), labelled).fit == Fit::kUnresolvable);
}

TEST_CASE("mig: gpuMemory asks the slice's memory, not the whole GPU's") {
  auto p = rules::make_gpu_memory_predicate(mig_config());
  const NodeView n = mixed_node("mixed", 3, 2);
  CHECK(check(*p, slice_pod(1, 1, 8192), n).fit == Fit::kPass);
  const auto small = check(*p, slice_pod(0, 1, 8192), n);
  CHECK(small.fit == Fit::kUnresolvable);
  CHECK(small.reason == "gpu memory 4864 MiB per slice (judged 5 GiB, the size its profile names) is below requested 8192 MiB");
  NodeView unlabelled = n;
  unlabelled.mig_memory[1].reset();
  CHECK(check(*p, slice_pod(1, 1, 8192), unlabelled).reason ==
        "node has no nvidia.com/mig-2g.10gb.memory label; pod requests 8192 MiB per slice");
  // A pod asking whole GPUs too is judged on both.
  PodRequest both = slice_pod(1, 1, 20000);
  both.requests.set(ViewSchema::kGpuResource, 1000);
  CHECK(check(*p, both, n).reason == "gpu memory 9984 MiB per slice (judged 10 GiB, the size its profile names) is below requested 20000 MiB");
}

TEST_CASE("mig: gpuFit ranks slice pods by the spare slices of their profile, gpuIdle applies to them") {
  auto fit = rules::make_gpu_fit_scorer(mig_config());
  auto idle = rules::make_gpu_idle_scorer(mig_config());
  CHECK(fit->applies(slice_pod(0, 1)));
  CHECK(idle->applies(slice_pod(0, 1)));
  CHECK_FALSE(fit->applies(test_support::gpu_pod(0)));
  const NodeView roomy = mixed_node("roomy", 7, 0);
  const NodeView tight = mixed_node("tight", 2, 0);
  ResourceAmounts none;
  const auto raw = rule_support::score(*fit, slice_pod(0, 2), {NodeInput{&roomy, &none}, NodeInput{&tight, &none}});
  CHECK(raw[0] == Approx(50.0));  // 5 spare slices
  CHECK(raw[1] == Approx(100.0));
}

TEST_CASE("mig: the decoder and the node cache read each profile's labels") {
  WireDecoder decoder;
  std::string body = R"({"Pod":{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c",
    "resources":{"limits":{"nvidia.com/mig-2g.10gb":"1"}}}]}},"Nodes":{"items":[{"metadata":{"name":"mixed",
    "labels":{"nvidia.com/mig-1g.5gb.count":"3","nvidia.com/mig-1g.5gb.memory":"4864",
    "nvidia.com/mig-2g.10gb.count":"2","nvidia.com/mig-2g.10gb.memory":"9984","nvidia.com/mig-3g.20gb.count":"1"}},
    "status":{"allocatable":{"nvidia.com/mig-2g.10gb":"2"}}}]}})";
  body.reserve(body.size() + kJsonPadding);
  const ExtenderArgs& args = decoder.decode_extender_args(body, mig_config().schema);
  CHECK(args.pod.requested(profile_resource(1)) == 1000);
  REQUIRE(args.nodes.size() == 1);
  const NodeView& n = args.nodes[0];
  CHECK(n.mig_count[0] == "3");
  CHECK(n.mig_memory[1] == "9984");
  CHECK(n.allocatable.get(profile_resource(1)) == 2000);
  const auto cached = CachedNode::copy_of(n);
  body.assign(body.size(), ' ');  // the cache keeps its own copies
  CHECK(cached->view().mig_count[1] == "2");
  CHECK(cached->view().mig_memory[0] == "4864");
}
