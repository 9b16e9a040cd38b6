// The cluster view's DRA store on its own: what each change tells the view (DraChanges), so that
// the view remakes only the nodes whose GPUs moved, recounts only where claims' holds moved, and
// uncounts a pod's own GPU request exactly when its first claim holding GPUs shows (and back at its last).
#include <catch2/catch.hpp>

#include <algorithm>

#include "dra_inventory_support.h"
#include "state/dra_store.h"

using namespace gpu_extender;
using namespace dra_inventory_support;

namespace {
// What the store told, as the view would have applied it.
struct Told final : DraChanges {
  std::vector<std::string> gpus, holds;
  std::vector<std::pair<std::string, bool>> covers;
  void gpus_changed(const std::string& node, const DraNodePart*) override { gpus.push_back(node); }
  void holds_changed(const std::string& node, const DraNodePart*) override { holds.push_back(node); }
  void covered(const std::string& uid, bool covered) override { covers.emplace_back(uid, covered); }
};
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
  Told e;
  store.upsert<stored::ResourceSlices>(h100s("s", "a", 4), e);
  CHECK(names(e.gpus, {"a"}));
  CHECK(e.holds.empty());
  REQUIRE(store.node("a") != nullptr);
  CHECK(store.node("a")->summary.count == 4);
  CHECK(store.in_use_on("a") == 0);

  Told moved;
  store.upsert<stored::ResourceSlices>(h100s("s", "b", 4), moved);
  CHECK(names(moved.gpus, {"a", "b"}));
  CHECK(store.node("a") == nullptr);  // nothing of DRA's is left there: the view may forget the node
  CHECK(store.stats().slices == 1);

  ResourceSliceView nic = slice_view("nic", "c", {device("eth0", "nic")});
  nic.driver = "nic.example.com";
  Told other;
  store.upsert<stored::ResourceSlices>(DraSlice::of(nic, kSchema), other);
  CHECK(other.gpus.empty());
  CHECK(store.node("c") == nullptr);

  Told gone;
  store.replace<stored::ResourceSlices>({}, gone);
  CHECK(names(gone.gpus, {"b"}));
  CHECK(store.stats().slices == 0);
}

TEST_CASE("DRA store: claims report their node's holds, and a pod is covered at its first claim, uncovered at its last") {
  DraStore store;
  Told slices;
  store.upsert<stored::ResourceSlices>(h100s("s", "a", 2), slices);

  Told first;
  store.upsert<stored::ResourceClaims>(claim_of("ns/one", "a", {"gpu-0"}, {"pod-1"}), first);
  CHECK(first.gpus.empty());  // a claim changes what is held, not what the node is
  CHECK(names(first.holds, {"a"}));
  CHECK(first.covers == std::vector<std::pair<std::string, bool>>{{"pod-1", true}});
  CHECK(store.covers("pod-1"));
  CHECK(store.in_use_on("a") == 1);

  Told second;  // the same pod's second claim, on the same GPU: no new cover, the GPU once
  store.upsert<stored::ResourceClaims>(claim_of("ns/two", "a", {"gpu-0"}, {"pod-1"}), second);
  CHECK(second.covers.empty());
  CHECK(store.in_use_on("a") == 1);

  Told one_left;
  store.erase<stored::ResourceClaims>("ns/one", one_left);
  CHECK(one_left.covers.empty());
  CHECK(store.covers("pod-1"));
  CHECK(store.in_use_on("a") == 1);

  Told last;
  store.erase<stored::ResourceClaims>("ns/two", last);
  CHECK(last.covers == std::vector<std::pair<std::string, bool>>{{"pod-1", false}});
  CHECK_FALSE(store.covers("pod-1"));
  CHECK(store.in_use_on("a") == 0);
}

TEST_CASE("DRA store: a claim before any slice keeps its node until it is gone") {
  DraStore store;
  Told early;
  store.upsert<stored::ResourceClaims>(claim_of("ns/early", "x", {"gpu-0"}), early);
  CHECK(names(early.holds, {"x"}));
  REQUIRE(store.node("x") != nullptr);
  CHECK(store.in_use_on("x") == 1);  // the device, named as itself until a slice says which GPU it is
  Told gone;
  store.replace<stored::ResourceClaims>({}, gone);
  CHECK(names(gone.holds, {"x"}));
  CHECK(store.node("x") == nullptr);
}

TEST_CASE("DRA store: a taint rule remakes every node with slices, a rule selecting nothing none") {
  DraStore store;
  Told setup;
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
  Told tainted;
  store.upsert<stored::DeviceTaintRules>(DraTaintRule::of(rule, kSchema), tainted);
  CHECK(names(tainted.gpus, {"a", "b"}));
  CHECK(store.in_use_on("a") == 1);  // gpu-1 is no longer free for a claim that tolerates nothing
  CHECK(store.in_use_on("b") == 0);

  rule.name = "nics";
  rule.driver = "nic.example.com";
  Told none;
  store.upsert<stored::DeviceTaintRules>(DraTaintRule::of(rule, kSchema), none);
  CHECK(none.gpus.empty());

  Told lifted;
  store.erase<stored::DeviceTaintRules>("drain", lifted);
  CHECK(names(lifted.gpus, {"a", "b"}));
  CHECK(store.in_use_on("a") == 0);
}

TEST_CASE("DRA store: templates say what claims made from them ask, and change no node") {
  DraStore store;
  DraClaim t = claim_of("ns/two-gpus", "", {});
  t.requested_gpus = 2;
  Told e;
  store.upsert<stored::ResourceClaimTemplates>(t, e);
  CHECK(e.gpus.empty());
  CHECK(e.holds.empty());
  PodRequest pod;
  pod.ns = "ns";
  pod.claims.push_back({"", "two-gpus"});
  CHECK(store.claimed_gpus_of(pod, nullptr) == 2);
  store.erase<stored::ResourceClaimTemplates>("ns/two-gpus", e);
  CHECK(store.claimed_gpus_of(pod, nullptr) == 0);
}
