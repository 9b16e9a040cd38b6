// The placement ledger (placement_ledger.h) apart from groups (group_book_test.cpp): pods assumed at
// /bind count on their node until the watch confirms them, a failed bind's undo is one call, pending
// pods are kept for their /bind and pruned by age, and what is in flight survives a relist.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "../test_support.h"
#include "gpu_extender/state/placement_ledger.h"
#include "state/cluster_view_writes.h"

using namespace gpu_extender;
using namespace std::chrono_literals;

namespace {
using test_support::gpus_on;
using test_support::watched_pod;

struct Fixture {
  std::shared_ptr<ClusterView> view = std::make_shared<ClusterView>();
  PlacementLedger ledger;
  explicit Fixture(LedgerOptions options = {}) : ledger(view, options) {}
  // A watch event, applied as the reflector does: through the ledger, which applies it to the view.
  void watch(const PodRequest& pod) { ledger.observe_pod(pod); }
  void reserve(std::string_view uid, const std::string& node, int gpus) {
    const PendingPod p = PendingPod::of(watched_pod(uid, "", gpus, "Pending"));
    ledger.reserve(p, node, p.requests);
  }
};

LedgerOptions assume_for(std::chrono::milliseconds ttl) {
  LedgerOptions o;
  o.assume_ttl = ttl;
  return o;
}
}  // namespace

TEST_CASE("placement ledger: assumed pods count until the watch confirms them, or the TTL ends") {
  Fixture f(assume_for(1000ms));
  f.reserve("x", "n1", 4);
  CHECK(gpus_on(*f.view, "n1") == 4);
  f.watch(watched_pod("x", "n1", 4));  // the watch confirms: still 4, not 8
  CHECK(gpus_on(*f.view, "n1") == 4);
  CHECK(f.ledger.stats().assumed == 0);
  f.reserve("y", "n2", 4);
  CHECK(f.ledger.expire(PlacementLedger::Clock::now()).assumed == 0);
  CHECK(f.ledger.expire(PlacementLedger::Clock::now() + 2s).assumed == 1);
  CHECK(gpus_on(*f.view, "n2") == 0);
  f.reserve("x", "n1", 4);  // already counted by the watch: no double count
  CHECK(gpus_on(*f.view, "n1") == 4);
}

TEST_CASE("placement ledger: a reader never sees a pod counted twice while the watch confirms it") {
  // The burst test's failure (a 2-GPU pod sent to the 8-GPU node while the 4-GPU one had room): the
  // view counted the bound pod, and a /filter read it before the ledger released its assumption.
  Fixture f;
  std::atomic<bool> done{false};
  std::atomic<int64_t> most{0}, reads{0};
  std::thread reader([&] {
    while (!done) {
      most = std::max(most.load(), gpus_on(*f.view, "n1"));
      ++reads;
    }
  });
  while (reads == 0) std::this_thread::yield();
  for (int i = 0; i < 3000; ++i) {
    const std::string uid = "p" + std::to_string(i);
    f.reserve(uid, "n1", 2);
    f.watch(watched_pod(uid, "n1", 2));
    f.ledger.observe_pod_deleted(uid);
  }
  done = true;
  reader.join();
  CHECK(most <= 2);
  CHECK(gpus_on(*f.view, "n1") == 0);
}

TEST_CASE("placement ledger: a failed bind is undone in one call") {
  Fixture f;
  const PendingPod p = PendingPod::of(watched_pod("x", "", 2, "Pending"));
  f.ledger.reserve(p, "n1", p.requests);
  CHECK(gpus_on(*f.view, "n1") == 2);
  CHECK(f.ledger.wait_at_gate(p).ok);  // no group: no gate
  f.ledger.roll_back(p);
  CHECK(gpus_on(*f.view, "n1") == 0);
  CHECK(f.ledger.stats().assumed == 0);
  CHECK_FALSE(f.ledger.pod_usage("x"));
}

TEST_CASE("placement ledger: an event of the pod still unbound keeps its assumption, the bound one ends it") {
  Fixture f;
  f.reserve("x", "n1", 4);
  f.watch(watched_pod("x", "", 4, "Pending"));  // /bind's annotation patch, before the Binding
  CHECK(gpus_on(*f.view, "n1") == 4);
  CHECK(f.ledger.stats().assumed == 1);
  CHECK(f.ledger.pod_usage("x")->first == "n1");  // a victim known only as assumed
  f.watch(watched_pod("x", "n1", 4));
  CHECK(gpus_on(*f.view, "n1") == 4);
  CHECK(f.ledger.stats().assumed == 0);
}

TEST_CASE("placement ledger: a relist keeps unconfirmed assumptions and ends the ones it lists") {
  Fixture f;
  f.watch(watched_pod("old", "n1", 2));
  f.reserve("new", "n1", 1);
  f.reserve("listed", "n1", 3);
  const std::vector<ClusterView::BoundPod> list{{"listed", "n1", watched_pod("listed", "n1", 3).requests, nullptr}};
  f.ledger.observe_relist(list);
  CHECK(gpus_on(*f.view, "n1") == 4);  // listed 3 + assumed 1; "old" is gone
  CHECK(f.ledger.stats().assumed == 1);
  f.ledger.observe_pod_deleted("new");
  CHECK(gpus_on(*f.view, "n1") == 3);
}

TEST_CASE("placement ledger: the pending-pod table is pruned by age, and taken at bind") {
  LedgerOptions o;
  o.pending_ttl = 50ms;
  Fixture f(o);
  PodRequest p = watched_pod("p1", "", 1, "Pending");
  p.name = "p";
  p.ns = "ns";
  p.scheduler_name = "gpu-scheduler";
  f.ledger.remember_pending(p);
  CHECK(f.ledger.stats().pending == 1);
  const auto taken = f.ledger.take_pending("p1");
  REQUIRE(taken);
  CHECK(taken->scheduler_name == "gpu-scheduler");
  CHECK(taken->requests.get(ViewSchema::kGpuResource) == 1000);
  CHECK_FALSE(f.ledger.take_pending("p1"));
  f.ledger.remember_pending(p);
  CHECK(f.ledger.expire(PlacementLedger::Clock::now() + 10ms).pending == 0);
  CHECK(f.ledger.expire(PlacementLedger::Clock::now() + 100ms).pending == 1);
  CHECK(f.ledger.stats().pending == 0);
}

TEST_CASE("placement ledger: the smallest shared GPU memory a pending pod asks") {
  Fixture f;
  CHECK(f.ledger.smallest_pending_shared_gpu_memory() == 0);
  PodRequest a = watched_pod("a", "", 0, "Pending"), b = watched_pod("b", "", 0, "Pending");
  a.requests.set(ViewSchema::kSharedGpuMemory, 8000);
  b.requests.set(ViewSchema::kSharedGpuMemory, 5000);
  f.ledger.remember_pending(a);
  f.ledger.remember_pending(b);
  CHECK(f.ledger.smallest_pending_shared_gpu_memory() == 5);
  f.ledger.take_pending("b");
  CHECK(f.ledger.smallest_pending_shared_gpu_memory() == 8);
}

TEST_CASE("placement ledger: a verb waiting for the binds before it sees the pod counted when it goes on") {
  Fixture f;
  f.view->upsert<stored::Nodes>(test_write(), test_support::gpu_node("n1", "A100", "40960", 8));
  f.ledger.expect_bind("a", 5s);
  CHECK(f.ledger.wait_for_binds_before("a") < 1s);  // its own bind: nothing to wait for
  std::atomic<int64_t> seen{-1};
  std::thread waiter([&] {
    f.ledger.wait_for_binds_before("b");
    seen = gpus_on(*f.view, "n1");
  });
  std::this_thread::sleep_for(50ms);  // the waiter is blocked (a bind that arrives sooner is fine too)
  CHECK(seen == -1);
  f.reserve("a", "n1", 3);  // "a"'s /bind: counted, and its arrival said, in one step
  waiter.join();
  CHECK(seen == 3);
  CHECK(f.ledger.bind_wait_stats().waits == 1);
  CHECK(f.ledger.bind_wait_stats().timeouts == 0);
}

TEST_CASE("placement ledger: a bind that never comes stops being waited for, and a refused one at once") {
  Fixture f;
  f.ledger.expect_bind("a", 30ms);
  const auto waited = f.ledger.wait_for_binds_before("b");
  CHECK(waited >= 25ms);
  CHECK(waited < 5s);
  CHECK(f.ledger.bind_wait_stats().timeouts == 1);
  f.ledger.expect_bind("c", 5s);
  f.ledger.bind_answered("c");  // refused before it was counted: nobody waits for it
  CHECK(f.ledger.wait_for_binds_before("b") < 1s);
  f.ledger.expect_bind("d", 0ms);  // no bind wait configured: nothing is expected
  CHECK(f.ledger.wait_for_binds_before("b") < 1s);
}

TEST_CASE("placement ledger: a shared GPU's pick sees what the picks before it reserved") {
  Fixture f;
  f.view->upsert<stored::Nodes>(test_write(), test_support::gpu_node("n1", "A100", "40960", 8));
  std::vector<int64_t> seen;
  auto pick = [&](const std::shared_ptr<const CachedNode>& node, const std::optional<ResourceAmounts>& used)
      -> std::optional<ResourceAmounts> {
    if (!node) return std::nullopt;
    seen.push_back(used ? used->get(ViewSchema::kGpuResource) / 1000 : 0);
    ResourceAmounts counted;
    counted.add(ViewSchema::kGpuResource, 1000);
    return counted;
  };
  const PendingPod a = PendingPod::of(watched_pod("a", "", 1, "Pending"));
  const PendingPod b = PendingPod::of(watched_pod("b", "", 1, "Pending"));
  CHECK(f.ledger.reserve_shared_gpu(a, "n1", pick));
  CHECK(f.ledger.reserve_shared_gpu(b, "n1", pick));
  CHECK(seen == std::vector<int64_t>{0, 1});
  CHECK(gpus_on(*f.view, "n1") == 2);
  CHECK_FALSE(f.ledger.reserve_shared_gpu(b, "no-such-node", pick));  // no node object: nothing reserved
  f.ledger.roll_back(b);
  CHECK(gpus_on(*f.view, "n1") == 1);
}
