// A request's snapshot of the view (ViewSnapshot): each name's slot, kept with its node while the view
// changes, brought up to date only where a node changed (from the view's change log, or from every slot
// once the log is past), and a list of names seen lately taken by its bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/state/view_snapshot.h"
#include "state/cluster_view_writes.h"

using namespace gpu_extender;

namespace {

// Nodes that carry nothing but a name.
void add_bare_nodes(ClusterView& view, std::initializer_list<const char*> names) {
  NodeView node;
  for (const char* name : names) {
    node.name = name;
    view.upsert<stored::Nodes>(test_write(), node);
  }
}

}  // namespace

TEST_CASE("names lookup: slots stay with their nodes, and a memo is refreshed only where a node changed") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2"});
  ViewSnapshot memo;
  std::vector<uint32_t> slots;
  const std::vector<std::string_view> names{"n2", "n1", "gone"};
  memo.update_and_find(view, names, slots);
  REQUIRE(slots[0] != ViewSnapshot::kNoSlot);
  REQUIRE(slots[1] != ViewSnapshot::kNoSlot);
  CHECK(slots[0] != slots[1]);
  CHECK(slots[2] == ViewSnapshot::kNoSlot);
  const uint32_t n1 = slots[1], n2 = slots[0];
  const uint64_t n1_version = memo.version(n1), n2_version = memo.version(n2);

  ResourceAmounts two;
  two.set(ViewSchema::kGpuResource, 2000);
  view.count_in_flight(test_write(), "n1", two, true);
  memo.update_and_find(view, names, slots);
  CHECK(memo.version(n1) != n1_version);
  CHECK(memo.used(n1).get(ViewSchema::kGpuResource) == 2000);
  CHECK(memo.version(n2) == n2_version);

  view.erase<stored::Nodes>(test_write(), "n1");  // its pod keeps the entry: no node object, so not a node to judge
  memo.update_and_find(view, names, slots);
  CHECK(slots[1] == ViewSnapshot::kNoSlot);
  view.count_in_flight(test_write(), "n1", two, false);  // now the entry goes, and its slot is free for the next node
  add_bare_nodes(view, {"n3"});
  const std::vector<std::string_view> n3{"n3"};
  memo.update_and_find(view, n3, slots);
  REQUIRE(slots[0] == n1);  // the slot is reused...
  CHECK(memo.version(n1) != n1_version);  // ...under a version no memo has seen
  CHECK(memo.node(n1)->view().name == "n3");
}

TEST_CASE("names lookup: a memo catches up from the view's change log, or from every slot once the log is past") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2", "n3"});
  const std::vector<std::string_view> names{"n1", "n2", "n3"};
  ViewSnapshot near, far;
  std::vector<uint32_t> slots;
  near.update_and_find(view, names, slots);
  far.update_and_find(view, names, slots);
  near.take_changes([](uint32_t) {});
  far.take_changes([](uint32_t) {});
  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  // A few changes: the memo reads only their slots, each once, however often it changed.
  for (int i = 0; i < 3; ++i) view.count_in_flight(test_write(), "n2", one, true);
  near.update_and_find(view, names, slots);
  REQUIRE(near.changed() == std::vector<uint32_t>{slots[1]});
  CHECK(near.used(slots[1]).get(ViewSchema::kGpuResource) == 3000);
  near.take_changes([](uint32_t) {});
  // More changes than the log holds (a relist): every slot is read, and the memo is right again.
  for (int i = 0; i < 10000; ++i) view.count_in_flight(test_write(), i % 2 == 0 ? "n1" : "n3", one, true);
  far.update_and_find(view, names, slots);
  std::vector<uint32_t> changed = far.changed();
  std::sort(changed.begin(), changed.end());
  std::vector<uint32_t> all = slots;
  std::sort(all.begin(), all.end());
  CHECK(changed == all);  // n2's change too: this memo had not seen it
  for (size_t i = 0; i < names.size(); ++i)
    CHECK(far.used(slots[i]).get(ViewSchema::kGpuResource) == (i == 1 ? 3000 : 5000000));
  near.update_and_find(view, names, slots);
  CHECK(near.used(slots[0]).get(ViewSchema::kGpuResource) == 5000000);
  CHECK(near.used(slots[2]).get(ViewSchema::kGpuResource) == 5000000);
}

TEST_CASE("names lookup: a list seen lately is taken by its bytes while the view's names stand") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2"});
  ViewSnapshot memo;
  std::vector<uint32_t> first, again;
  const std::string json = R"(["n1","n2"])";
  memo.update_and_find(view, std::vector<std::string_view>{"n1", "n2"}, first, json);
  REQUIRE(first[0] != ViewSnapshot::kNoSlot);
  std::vector<uint32_t> unremembered;
  memo.update_and_find(view, std::vector<std::string_view>{"n2", "n1"}, unremembered, json);
  CHECK(unremembered[0] == first[1]);  // looked up by name: a lookup alone remembers nothing
  memo.remember(json, first);
  // The same bytes: the slots remembered, not the names given (which a real body could not differ
  // from; here they show which of the two answered).
  memo.update_and_find(view, std::vector<std::string_view>{"n2", "n1"}, again, json);
  CHECK(again == first);
  // A node goes and another takes its slot: the bytes are the same, the names are looked up again.
  view.erase<stored::Nodes>(test_write(), "n1");
  add_bare_nodes(view, {"n3"});
  memo.update_and_find(view, std::vector<std::string_view>{"n1", "n2"}, again, json);
  CHECK(again[0] == ViewSnapshot::kNoSlot);
  CHECK(again[1] == first[1]);
}

TEST_CASE("snapshot: full mode finds a deleted node's usage while its pods remain, where names mode finds no node") {
  ClusterView view;
  add_bare_nodes(view, {"n1"});
  ResourceAmounts two;
  two.set(ViewSchema::kGpuResource, 2000);
  view.count_in_flight(test_write(), "n1", two, true);
  view.erase<stored::Nodes>(test_write(), "n1");
  ViewSnapshot snapshot;
  const std::vector<std::string_view> names{"n1"};
  std::vector<uint32_t> slots;
  snapshot.update_and_find(view, names, slots);
  CHECK(slots[0] == ViewSnapshot::kNoSlot);
  snapshot.update_and_find(view, names, slots, {}, ViewSnapshot::Find::kEntries);
  REQUIRE(slots[0] != ViewSnapshot::kNoSlot);
  CHECK(snapshot.node(slots[0]) == nullptr);
  CHECK(snapshot.used(slots[0]).get(ViewSchema::kGpuResource) == 2000);
}

TEST_CASE("snapshot: changes nobody takes stay bounded, and then every slot is reported changed") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2", "n3"});
  ViewSnapshot snapshot;
  snapshot.update(view);
  snapshot.take_changes([](uint32_t) {});
  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  // One node changes before each of many updates (a workspace that only serves full mode never takes
  // the changes names mode would): the list stops growing at the snapshot's size.
  for (int i = 0; i < 100; ++i) {
    view.count_in_flight(test_write(), "n2", one, true);
    snapshot.update(view);
    CHECK(snapshot.changed().size() <= snapshot.size());
  }
  std::vector<uint32_t> marked;
  snapshot.take_changes([&](uint32_t slot) { marked.push_back(slot); });
  CHECK(marked.size() == snapshot.size());  // all of them: n1 and n3 too, as a safe superset
  CHECK(snapshot.used(1).get(ViewSchema::kGpuResource) + snapshot.used(0).get(ViewSchema::kGpuResource) +
            snapshot.used(2).get(ViewSchema::kGpuResource) ==
        100000);
  marked.clear();
  snapshot.take_changes([&](uint32_t slot) { marked.push_back(slot); });
  CHECK(marked.empty());
}
