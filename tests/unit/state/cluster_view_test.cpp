#include <catch2/catch.hpp>
#include <thread>

#include "../test_support.h"
#include "gpu_extender/state/cluster_view.h"
#include "state/cluster_view_writes.h"

using namespace gpu_extender;
using namespace std::chrono_literals;

namespace {
using test_support::gpus_on;
using test_support::watched_pod;
}  // namespace

TEST_CASE("cluster view: pods add, move, finish and leave") {
  ClusterView v;
  v.upsert_pod(test_write(), watched_pod("a", "n1", 2));
  v.upsert_pod(test_write(), watched_pod("b", "n1", 3));
  CHECK(gpus_on(v, "n1") == 5);
  v.upsert_pod(test_write(), watched_pod("a", "n1", 2));  // MODIFIED without change: counted once
  CHECK(gpus_on(v, "n1") == 5);
  v.upsert_pod(test_write(), watched_pod("b", "n1", 3, "Succeeded"));
  CHECK(gpus_on(v, "n1") == 2);
  v.delete_pod(test_write(), "a");
  CHECK(gpus_on(v, "n1") == 0);
  v.upsert_pod(test_write(), watched_pod("c", "", 8, "Pending"));  // not on a node: holds nothing
  CHECK(v.stats().pods == 0);
}

TEST_CASE("cluster view: a relist replaces pods but keeps what is counted in flight") {
  ClusterView v;
  v.upsert_pod(test_write(), watched_pod("old", "n1", 2));
  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  v.count_in_flight(test_write(), "n1", one, true);  // the ledger's: an assumed pod, or a group's held room
  v.replace_pods(test_write(), {{"fresh", "n1", watched_pod("fresh", "n1", 3).requests, nullptr}});
  CHECK(gpus_on(v, "n1") == 4);  // fresh 3 + in flight 1; "old" is gone
  v.count_in_flight(test_write(), "n1", one, false);
  CHECK(gpus_on(v, "n1") == 3);
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
  v.upsert<stored::Nodes>(test_write(), n);
  name = "overwritten";  // the cache owns its copy
  model = "T4";
  std::vector<std::string_view> names{"gpu-1", "missing"};
  std::vector<std::shared_ptr<const CachedNode>> found;
  v.find_nodes(names, found);
  REQUIRE(found[0]);
  CHECK(found[0]->view().name == "gpu-1");
  CHECK(found[0]->view().gpu_model == std::optional<std::string_view>("A100"));
  CHECK_FALSE(found[1]);
  v.erase<stored::Nodes>(test_write(), "gpu-1");
  CHECK(found[0]->view().name == "gpu-1");  // still valid for the request holding it
  v.mark_nodes_synced(test_write());
  v.mark_pods_synced(test_write());
  CHECK(v.ready());
}

TEST_CASE("cluster view: a deleted node leaves no entry once nothing runs on it") {
  ClusterView v;
  NodeView n1;
  n1.name = "n1";
  NodeView n2;
  n2.name = "n2";
  v.upsert<stored::Nodes>(test_write(), n1);
  v.upsert<stored::Nodes>(test_write(), n2);
  v.upsert_pod(test_write(), watched_pod("a", "n2", 2));
  CHECK(v.stats().node_entries == 2);
  v.erase<stored::Nodes>(test_write(), "n1");
  CHECK(v.stats().node_entries == 1);
  v.erase<stored::Nodes>(test_write(), "n2");  // its pod is still there (its deletion follows): the usage stays
  CHECK(v.stats().node_entries == 1);
  CHECK(v.stats().nodes == 0);
  v.delete_pod(test_write(), "a");
  CHECK(v.stats().node_entries == 0);
  // A relist that no longer names a node drops it too.
  v.upsert<stored::Nodes>(test_write(), n1);
  v.replace<stored::Nodes>(test_write(), {});
  CHECK(v.stats().node_entries == 0);
}

TEST_CASE("cluster view: shared GPU memory, free and fragmented for the pods pending") {
  ClusterView v;
  NodeView node;
  node.name = "share";
  node.allocatable.set(ViewSchema::kSharedGpuMemory, 64000);  // 4 GPUs of 16 GiB
  node.allocatable.set(ViewSchema::kSharedGpuCount, 4000);
  v.upsert<stored::Nodes>(test_write(), node);
  auto on_device = [](std::string_view uid, int device, int gib) {
    PodRequest p = watched_pod(uid, "share", 0);
    p.requests.set(ViewSchema::kSharedGpuMemory, gib * 1000LL);
    p.requests.set(shared_gpu_device_slot(static_cast<size_t>(device)), gib * 1000LL);
    return p;
  };
  v.upsert_pod(test_write(), on_device("a", 0, 12));  // 4 free
  v.upsert_pod(test_write(), on_device("b", 1, 10));  // 6 free
  v.upsert_pod(test_write(), on_device("c", 2, 16));  // 0 free
  ClusterView::SharedGpuStats s = v.shared_gpu_stats(0);
  CHECK(s.devices == 4);
  CHECK(s.free == 4 + 6 + 16);
  CHECK(s.fragmented == 0);  // nobody waits
  s = v.shared_gpu_stats(5);  // a pod pending asks 5 GiB (PlacementLedger::smallest_pending_shared_gpu_memory)
  CHECK(s.smallest_pending == 5);
  CHECK(s.fragmented == 4);  // GPU 0's 4 GiB fits no pending pod; GPU 1's 6 does
}

TEST_CASE("cluster view: catching up waits only while the watch rests, and ends with the change it brings") {
  ClusterView v;
  v.upsert_pod(test_write(), watched_pod("victim", "n1", 4));
  const auto soon = [] { return ClusterView::Clock::now() + 2s; };

  SECTION("a change since `seen` needs no wait") {
    const uint64_t seen = v.change_count();
    v.delete_pod(test_write(), "victim");
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
      watch = std::thread([&] { v.delete_pod(test_write(), "victim"); });  // the events it held back
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
