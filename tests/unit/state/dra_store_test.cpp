// The cluster view's DRA store on its own: what each change reports to the view (DraEffects), so that
// the view remakes only the nodes whose GPUs moved, recounts only where claims' holds moved, and
// uncounts a pod's own GPU request exactly when its first claim holding GPUs shows (and back at its last).
#include <catch2/catch.hpp>

#include <algorithm>

#include "dra_inventory_support.h"
#include "state/dra_store.h"

using namespace gpu_extender;
using namespace dra_inventory_support;

namespace {
bool names(const std::vector<std::string>& got, std::vector<std::string> want) {
  std::vector<std::string> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::sort(want.begin(), want.end());
  return sorted == want;
}
}  // namespace

TEST_CASE("DRA store: a slice changes its node's GPUs, a moved slice both nodes', another driver's none") {
  DraStore store;
  DraEffects e;
  store.upsert<stored::ResourceSlices>(h100s("s", "a", 4), e);
  CHECK(names(e.gpus_changed, {"a"}));
  CHECK(e.holds_changed.empty());
  REQUIRE(store.node("a") != nullptr);
  CHECK(store.node("a")->summary.count == 4);
  CHECK(store.in_use_on("a") == 0);

  DraEffects moved;
  store.upsert<stored::ResourceSlices>(h100s("s", "b", 4), moved);
  CHECK(names(moved.gpus_changed, {"a", "b"}));
  CHECK(store.node("a") == nullptr);  // nothing of DRA's is left there: the view may forget the node
  CHECK(store.stats().slices == 1);

  ResourceSliceView nic = slice_view("nic", "c", {device("eth0", "nic")});
  nic.driver = "nic.example.com";
  DraEffects other;
  store.upsert<stored::ResourceSlices>(DraSlice::of(nic, kSchema), other);
  CHECK(other.gpus_changed.empty());
  CHECK(store.node("c") == nullptr);

  DraEffects gone;
  store.replace<stored::ResourceSlices>({}, gone);
  CHECK(names(gone.gpus_changed, {"b"}));
  CHECK(store.stats().slices == 0);
}

TEST_CASE("DRA store: claims report their node's holds, and a pod is covered at its first claim, uncovered at its last") {
  DraStore store;
  DraEffects slices;
  store.upsert<stored::ResourceSlices>(h100s("s", "a", 2), slices);

  DraEffects first;
  store.upsert<stored::ResourceClaims>(claim_of("ns/one", "a", {"gpu-0"}, {"pod-1"}), first);
  CHECK(first.gpus_changed.empty());  // a claim changes what is held, not what the node is
  CHECK(names(first.holds_changed, {"a"}));
  CHECK(first.covered == std::vector<std::pair<std::string, bool>>{{"pod-1", true}});
  CHECK(store.covers("pod-1"));
  CHECK(store.in_use_on("a") == 1);

  DraEffects second;  // the same pod's second claim, on the same GPU: no new cover, the GPU once
  store.upsert<stored::ResourceClaims>(claim_of("ns/two", "a", {"gpu-0"}, {"pod-1"}), second);
  CHECK(second.covered.empty());
  CHECK(store.in_use_on("a") == 1);

  DraEffects one_left;
  store.erase<stored::ResourceClaims>("ns/one", one_left);
  CHECK(one_left.covered.empty());
  CHECK(store.covers("pod-1"));
  CHECK(store.in_use_on("a") == 1);

  DraEffects last;
  store.erase<stored::ResourceClaims>("ns/two", last);
  CHECK(last.covered == std::vector<std::pair<std::string, bool>>{{"pod-1", false}});
  CHECK_FALSE(store.covers("pod-1"));
  CHECK(store.in_use_on("a") == 0);
}

TEST_CASE("DRA store: a claim before any slice keeps its node until it is gone") {
  DraStore store;
  DraEffects early;
  store.upsert<stored::ResourceClaims>(claim_of("ns/early", "x", {"gpu-0"}), early);
  CHECK(names(early.holds_changed, {"x"}));
  REQUIRE(store.node("x") != nullptr);
  CHECK(store.in_use_on("x") == 1);  // the device, named as itself until a slice says which GPU it is
  DraEffects gone;
  store.replace<stored::ResourceClaims>({}, gone);
  CHECK(names(gone.holds_changed, {"x"}));
  CHECK(store.node("x") == nullptr);
}

TEST_CASE("DRA store: a taint rule remakes every node with slices, a rule selecting nothing none") {
  DraStore store;
  DraEffects setup;
  store.upsert<stored::ResourceSlices>(h100s("sa", "a", 2), setup);
  store.upsert<stored::ResourceSlices>(h100s("sb", "b", 2), setup);
  store.upsert<stored::ResourceClaims>(claim_of("ns/c", "c", {"gpu-0"}), setup);  // claims only: no GPUs to taint

  DeviceTaintRuleView rule;
  rule.name = "drain";
  rule.has_selector = true;
  rule.driver = "gpu.nvidia.com";
  rule.pool = "a";
  rule.device = "gpu-1";
  rule.taint = {"example.com/drain", "", "NoSchedule"};
  DraEffects tainted;
  store.upsert<stored::DeviceTaintRules>(DraTaintRule::of(rule, kSchema), tainted);
  CHECK(names(tainted.gpus_changed, {"a", "b"}));
  CHECK(store.in_use_on("a") == 1);  // gpu-1 is no longer free for a claim that tolerates nothing
  CHECK(store.in_use_on("b") == 0);

  rule.name = "nics";
  rule.driver = "nic.example.com";
  DraEffects none;
  store.upsert<stored::DeviceTaintRules>(DraTaintRule::of(rule, kSchema), none);
  CHECK(none.gpus_changed.empty());

  DraEffects lifted;
  store.erase<stored::DeviceTaintRules>("drain", lifted);
  CHECK(names(lifted.gpus_changed, {"a", "b"}));
  CHECK(store.in_use_on("a") == 0);
}

TEST_CASE("DRA store: templates say what claims made from them ask, and change no node") {
  DraStore store;
  DraClaim t = claim_of("ns/two-gpus", "", {});
  t.requested_gpus = 2;
  DraEffects e;
  store.upsert<stored::ResourceClaimTemplates>(t, e);
  CHECK(e.gpus_changed.empty());
  CHECK(e.holds_changed.empty());
  PodRequest pod;
  pod.ns = "ns";
  pod.claims.push_back({"", "two-gpus"});
  CHECK(store.claimed_gpus_of(pod, nullptr) == 2);
  store.erase<stored::ResourceClaimTemplates>("ns/two-gpus", e);
  CHECK(store.claimed_gpus_of(pod, nullptr) == 0);
}
