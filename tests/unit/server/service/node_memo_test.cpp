// Names mode's node lookups (NodeMemo): each name's slot in the memo, kept with its node while the view
// changes, refreshed only where a node changed (from the view's change log, or from every slot once the
// log is past), and a list of names seen lately taken by its bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "gpu_extender/state/cluster_view.h"
#include "server/service/node_memo.h"

using namespace gpu_extender;

namespace {

// Nodes that carry nothing but a name.
void add_bare_nodes(ClusterView& view, std::initializer_list<const char*> names) {
  NodeView node;
  for (const char* name : names) {
    node.name = name;
    view.upsert_node(node);
  }
}

}  // namespace

TEST_CASE("names lookup: slots stay with their nodes, and a memo is refreshed only where a node changed") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2"});
  NodeMemo memo;
  std::vector<uint32_t> slots;
  const std::vector<std::string_view> names{"n2", "n1", "gone"};
  memo.lookup(view, names, slots);
  REQUIRE(slots[0] != NodeMemo::kNoSlot);
  REQUIRE(slots[1] != NodeMemo::kNoSlot);
  CHECK(slots[0] != slots[1]);
  CHECK(slots[2] == NodeMemo::kNoSlot);
  const uint32_t n1 = slots[1], n2 = slots[0];
  const uint64_t n1_version = memo.version[n1], n2_version = memo.version[n2];

  ResourceAmounts two;
  two.set(ViewSchema::kGpuResource, 2000);
  view.count_in_flight("n1", two, true);
  memo.lookup(view, names, slots);
  CHECK(memo.version[n1] != n1_version);
  CHECK(memo.used[n1].get(ViewSchema::kGpuResource) == 2000);
  CHECK(memo.version[n2] == n2_version);

  view.delete_node("n1");  // its pod keeps the entry: no node object, so not a node to judge
  memo.lookup(view, names, slots);
  CHECK(slots[1] == NodeMemo::kNoSlot);
  view.count_in_flight("n1", two, false);  // now the entry goes, and its slot is free for the next node
  add_bare_nodes(view, {"n3"});
  const std::vector<std::string_view> n3{"n3"};
  memo.lookup(view, n3, slots);
  REQUIRE(slots[0] == n1);  // the slot is reused...
  CHECK(memo.version[n1] != n1_version);  // ...under a version no memo has seen
  CHECK(memo.node[n1]->view().name == "n3");
}

TEST_CASE("names lookup: a memo catches up from the view's change log, or from every slot once the log is past") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2", "n3"});
  const std::vector<std::string_view> names{"n1", "n2", "n3"};
  NodeMemo near, far;
  std::vector<uint32_t> slots;
  near.lookup(view, names, slots);
  far.lookup(view, names, slots);
  near.changed.clear();
  far.changed.clear();
  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  // A few changes: the memo reads only their slots, each once, however often it changed.
  for (int i = 0; i < 3; ++i) view.count_in_flight("n2", one, true);
  near.lookup(view, names, slots);
  REQUIRE(near.changed == std::vector<uint32_t>{slots[1]});
  CHECK(near.used[slots[1]].get(ViewSchema::kGpuResource) == 3000);
  near.changed.clear();
  // More changes than the log holds (a relist): every slot is read, and the memo is right again.
  for (int i = 0; i < 10000; ++i) view.count_in_flight(i % 2 == 0 ? "n1" : "n3", one, true);
  far.lookup(view, names, slots);
  std::vector<uint32_t> changed = far.changed;
  std::sort(changed.begin(), changed.end());
  std::vector<uint32_t> all = slots;
  std::sort(all.begin(), all.end());
  CHECK(changed == all);  // n2's change too: this memo had not seen it
  for (size_t i = 0; i < names.size(); ++i)
    CHECK(far.used[slots[i]].get(ViewSchema::kGpuResource) == (i == 1 ? 3000 : 5000000));
  near.lookup(view, names, slots);
  CHECK(near.used[slots[0]].get(ViewSchema::kGpuResource) == 5000000);
  CHECK(near.used[slots[2]].get(ViewSchema::kGpuResource) == 5000000);
}

TEST_CASE("names lookup: a list seen lately is taken by its bytes while the view's names stand") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2"});
  NodeMemo memo;
  std::vector<uint32_t> first, again;
  const std::string json = R"(["n1","n2"])";
  memo.lookup(view, std::vector<std::string_view>{"n1", "n2"}, first, json);
  REQUIRE(first[0] != NodeMemo::kNoSlot);
  std::vector<uint32_t> unremembered;
  memo.lookup(view, std::vector<std::string_view>{"n2", "n1"}, unremembered, json);
  CHECK(unremembered[0] == first[1]);  // looked up by name: a lookup alone remembers nothing
  memo.remember(json, first);
  // The same bytes: the slots remembered, not the names given (which a real body could not differ
  // from; here they show which of the two answered).
  memo.lookup(view, std::vector<std::string_view>{"n2", "n1"}, again, json);
  CHECK(again == first);
  // A node goes and another takes its slot: the bytes are the same, the names are looked up again.
  view.delete_node("n1");
  add_bare_nodes(view, {"n3"});
  memo.lookup(view, std::vector<std::string_view>{"n1", "n2"}, again, json);
  CHECK(again[0] == NodeMemo::kNoSlot);
  CHECK(again[1] == first[1]);
}
