#include <catch2/catch.hpp>
#include <thread>

#include "../test_support.h"
#include "gpu_extender/cluster_view.h"

using namespace gpu_extender;
using namespace std::chrono_literals;

namespace {
PodRequest bound(std::string_view uid, std::string_view node, int gpus, std::string_view phase = "Running") {
  PodRequest p;
  p.uid = uid;
  p.node_name = node;
  p.phase = phase;
  p.requests.set(ViewSchema::kGpuResource, gpus * 1000LL);
  return p;
}
int64_t gpus_on(const ClusterView& v, std::string_view node) {
  return v.used_on(node)->get(ViewSchema::kGpuResource) / 1000;
}
}  // namespace

TEST_CASE("cluster view: pods add, move, finish and leave") {
  ClusterView v;
  v.upsert_pod(bound("a", "n1", 2));
  v.upsert_pod(bound("b", "n1", 3));
  CHECK(gpus_on(v, "n1") == 5);
  v.upsert_pod(bound("a", "n1", 2));  // MODIFIED without change: counted once
  CHECK(gpus_on(v, "n1") == 5);
  v.upsert_pod(bound("b", "n1", 3, "Succeeded"));
  CHECK(gpus_on(v, "n1") == 2);
  v.delete_pod("a");
  CHECK(gpus_on(v, "n1") == 0);
  v.upsert_pod(bound("c", "", 8, "Pending"));  // not on a node: holds nothing
  CHECK(v.stats().pods == 0);
}

TEST_CASE("cluster view: assumed pods count until confirmed or expired") {
  ClusterView v(1000ms);
  ResourceAmounts four;
  four.set(ViewSchema::kGpuResource, 4000);
  v.assume_pod("x", "n1", four);
  CHECK(gpus_on(v, "n1") == 4);
  v.upsert_pod(bound("x", "n1", 4));  // the watch confirms: still 4, not 8
  CHECK(gpus_on(v, "n1") == 4);
  CHECK(v.stats().assumed == 0);
  v.assume_pod("y", "n2", four);
  CHECK(v.expire_assumed(ClusterView::Clock::now()) == 0);
  CHECK(v.expire_assumed(ClusterView::Clock::now() + 2s) == 1);
  CHECK(gpus_on(v, "n2") == 0);
  v.assume_pod("x", "n1", four);  // already counted by the watch: no double count
  CHECK(gpus_on(v, "n1") == 4);
}

TEST_CASE("cluster view: a relist replaces pods but keeps unconfirmed assumptions") {
  ClusterView v;
  v.upsert_pod(bound("old", "n1", 2));
  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  v.assume_pod("new", "n1", one);
  v.replace_pods({{"fresh", "n1", bound("fresh", "n1", 3).requests, nullptr}});
  CHECK(gpus_on(v, "n1") == 4);  // fresh 3 + assumed 1; "old" is gone
  CHECK(v.pod_usage("fresh")->first == "n1");
  CHECK_FALSE(v.pod_usage("old").has_value());
}

TEST_CASE("cluster view: nodes are copied, found by name, and held by requests") {
  ClusterView v;
  CHECK_FALSE(v.ready());
  std::string name = "gpu-1", model = "A100";
  NodeView n;
  n.name = name;
  n.gpu_model = model;
  v.upsert_node(n);
  name = "overwritten";  // the cache owns its copy
  model = "T4";
  std::vector<std::string_view> names{"gpu-1", "missing"};
  std::vector<std::shared_ptr<const CachedNode>> found;
  v.find_nodes(names, found);
  REQUIRE(found[0]);
  CHECK(found[0]->view().name == "gpu-1");
  CHECK(found[0]->view().gpu_model == std::optional<std::string_view>("A100"));
  CHECK_FALSE(found[1]);
  v.delete_node("gpu-1");
  CHECK(found[0]->view().name == "gpu-1");  // still valid for the request holding it
  v.mark_nodes_synced();
  v.mark_pods_synced();
  CHECK(v.ready());
}

TEST_CASE("cluster view: a deleted node leaves no entry once nothing runs on it") {
  ClusterView v;
  NodeView n1;
  n1.name = "n1";
  NodeView n2;
  n2.name = "n2";
  v.upsert_node(n1);
  v.upsert_node(n2);
  v.upsert_pod(bound("a", "n2", 2));
  CHECK(v.stats().node_entries == 2);
  v.delete_node("n1");
  CHECK(v.stats().node_entries == 1);
  v.delete_node("n2");  // its pod is still there (its deletion follows): the usage stays
  CHECK(v.stats().node_entries == 1);
  CHECK(v.stats().nodes == 0);
  v.delete_pod("a");
  CHECK(v.stats().node_entries == 0);
  // A relist that no longer names a node drops it too.
  v.upsert_node(n1);
  v.replace_nodes({});
  CHECK(v.stats().node_entries == 0);
}

TEST_CASE("cluster view: the pending-pod table is pruned by age, and taken at bind") {
  ClusterView v(1000ms, 50ms);
  PodRequest p = bound("p1", "", 1, "Pending");
  p.name = "p";
  p.ns = "ns";
  p.scheduler_name = "gpu-scheduler";
  v.remember_pending(p);
  CHECK(v.stats().pending == 1);
  const auto taken = v.take_pending("p1");
  REQUIRE(taken);
  CHECK(taken->scheduler_name == "gpu-scheduler");
  CHECK(taken->requests.get(ViewSchema::kGpuResource) == 1000);
  CHECK_FALSE(v.take_pending("p1"));
  v.remember_pending(p);
  CHECK(v.prune_pending(ClusterView::Clock::now() + 10ms) == 0);
  CHECK(v.prune_pending(ClusterView::Clock::now() + 100ms) == 1);
  CHECK(v.stats().pending == 0);
}

TEST_CASE("cluster view: an event of the pod still unbound keeps its assumption, the bound one ends it") {
  ClusterView v;
  ResourceAmounts four;
  four.set(ViewSchema::kGpuResource, 4000);
  v.assume_pod("x", "n1", four);
  v.upsert_pod(bound("x", "", 4, "Pending"));  // /bind's annotation patch, before the Binding
  CHECK(gpus_on(v, "n1") == 4);
  CHECK(v.stats().assumed == 1);
  v.upsert_pod(bound("x", "n1", 4));
  CHECK(gpus_on(v, "n1") == 4);
  CHECK(v.stats().assumed == 0);
}

TEST_CASE("cluster view: shared GPU memory, free and fragmented for the pods pending") {
  ClusterView v;
  NodeView node;
  node.name = "share";
  node.allocatable.set(ViewSchema::kSharedGpuMemory, 64000);  // 4 GPUs of 16 GiB
  node.allocatable.set(ViewSchema::kSharedGpuCount, 4000);
  v.upsert_node(node);
  auto on_device = [](std::string_view uid, int device, int gib) {
    PodRequest p = bound(uid, "share", 0);
    p.requests.set(ViewSchema::kSharedGpuMemory, gib * 1000LL);
    p.requests.set(shared_gpu_device_slot(static_cast<size_t>(device)), gib * 1000LL);
    return p;
  };
  v.upsert_pod(on_device("a", 0, 12));  // 4 free
  v.upsert_pod(on_device("b", 1, 10));  // 6 free
  v.upsert_pod(on_device("c", 2, 16));  // 0 free
  ClusterView::SharedGpuStats s = v.shared_gpu_stats();
  CHECK(s.devices == 4);
  CHECK(s.free == 4 + 6 + 16);
  CHECK(s.fragmented == 0);  // nobody waits
  PodRequest waiting;
  waiting.uid = "w";
  waiting.requests.set(ViewSchema::kSharedGpuMemory, 5000);
  v.remember_pending(waiting);
  s = v.shared_gpu_stats();
  CHECK(s.smallest_pending == 5);
  CHECK(s.fragmented == 4);  // GPU 0's 4 GiB fits no pending pod; GPU 1's 6 does
}

TEST_CASE("cluster view: catching up waits only while the watch rests, and ends with the change it brings") {
  ClusterView v;
  v.upsert_pod(bound("victim", "n1", 4));
  const auto soon = [] { return ClusterView::Clock::now() + 2s; };

  SECTION("a change since `seen` needs no wait") {
    const uint64_t seen = v.change_count();
    v.delete_pod("victim");
    CHECK(v.catch_up(seen, soon()));
  }
  SECTION("no watch resting (or none known): nothing is on its way, so no wait") {
    const uint64_t seen = v.change_count();
    CHECK_FALSE(v.catch_up(seen, soon()));
    v.set_watch_hurry([] { return false; });
    const auto before = ClusterView::Clock::now();
    CHECK_FALSE(v.catch_up(seen, soon()));
    CHECK(ClusterView::Clock::now() - before < 1s);
  }
  SECTION("a resting watch is hurried, and the wait ends when its events reach the view") {
    std::thread watch;
    v.set_watch_hurry([&] {
      watch = std::thread([&] { v.delete_pod("victim"); });  // the events it held back
      return true;
    });
    const uint64_t seen = v.change_count();
    CHECK(v.catch_up(seen, soon()));
    watch.join();
    CHECK(gpus_on(v, "n1") == 0);
  }
  SECTION("a hurried watch that brings nothing: the wait ends at the deadline") {
    v.set_watch_hurry([] { return true; });
    const uint64_t seen = v.change_count();
    CHECK_FALSE(v.catch_up(seen, ClusterView::Clock::now() + 20ms));
  }
}
