#pragma once
// The group book's test bed (group_book_test.cpp): layer-3 blocks of 8-GPU nodes in a cluster view, the
// members of a group, and the ledger's steps as /filter and /bind take them.
#include <catch2/catch.hpp>

#include <deque>
#include <functional>
#include <set>
#include <thread>

#include "../test_support.h"
#include "gpu_extender/state/placement_ledger.h"
#include "state/cluster_view_writes.h"

using namespace gpu_extender;

namespace group_book_support {

constexpr size_t kLayer3 = 3;  // in the default policy's levels

// Two layer-3 blocks of 8-GPU nodes, in the view and as the scheduler would send them.
struct Cluster {
  std::shared_ptr<const Policy> policy = test_support::default_policy();
  std::shared_ptr<ClusterView> view = std::make_shared<ClusterView>();
  std::deque<std::string> names;
  std::vector<std::shared_ptr<const CachedNode>> cached;
  std::deque<ResourceAmounts> used;
  std::vector<NodeInput> inputs;

  Cluster(int blocks, int per_block) : Cluster(std::vector<int>(static_cast<size_t>(blocks), per_block)) {}
  explicit Cluster(const std::vector<int>& block_sizes) {
    static const std::array<std::string, 3> block_names{"nn-a", "nn-b", "nn-c"};
    for (size_t b = 0; b < block_sizes.size(); ++b)
      for (int i = 0; i < block_sizes[b]; ++i) {
        names.push_back(block_names[b] + "-" + std::to_string(i));
        NodeView n = test_support::gpu_node(names.back(), "A100", "81920", 8);
        n.topology[kLayer3] = block_names[b];
        view->upsert<stored::Nodes>(test_write(), n);
        cached.push_back(CachedNode::copy_of(n));
      }
  }
  // What the scheduler sends: every node (or those `sent` names), with the view's usage as of now.
  std::set<std::string> sent;  // empty: all
  bool is_sent(const std::string& name) const { return sent.empty() || sent.count(name) > 0; }
  std::span<const NodeInput> candidates() {
    inputs.clear();
    used.clear();
    for (const auto& node : cached) used.push_back(view->used_on(node->view().name).value_or(ResourceAmounts{}));
    for (size_t i = 0; i < cached.size(); ++i)
      if (is_sent(std::string(cached[i]->view().name))) inputs.emplace_back(&cached[i]->view(), &used[i]);
    return inputs;
  }
  int64_t gpus_used(const std::string& node) const { return view->used_on(node)->get(ViewSchema::kGpuResource) / 1000; }
  int64_t gpus_used_in(char block) const {
    int64_t sum = 0;
    for (const auto& n : names)
      if (n[3] == block) sum += gpus_used(n);
    return sum;
  }
};

// A member's pod, pointing into the member's own strings: never copied or moved (kept in a deque).
struct Member {
  std::string uid, name, node;
  PodRequest pod;
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;
  Member(int i, int gpus, std::string_view size) : uid("uid-w" + std::to_string(i)), name("w" + std::to_string(i)) {
    pod = test_support::gpu_pod(gpus, "A100");
    pod.name = name;
    pod.uid = uid;
    pod.group.name = "llama";
    pod.group.size = size;
    pod.group.required_topology = "topology.k8s.aws/network-node-layer-3";
  }
};

inline GroupBook::Admission admit(PlacementLedger& book, Cluster& c, const PodRequest& pod) {
  const auto spec = group_spec_of(pod, c.policy->schema());
  REQUIRE(spec);
  return book.admit(pod, *spec, *c.policy, [&] { return c.candidates(); },
                    [&](std::span<const std::string> open) {
                      return std::any_of(open.begin(), open.end(), [&](const std::string& n) { return c.is_sent(n); });
                    });
}

// /bind's part of the book for a member, as bind.cpp does it: counted on its node, the gate, the API's
// answer (`api_ok`), commit or roll back. Blocks at the gate: run the first members on their own threads.
inline GroupBook::Gate bind(PlacementLedger& book, Cluster& c, const PodRequest& pod, const std::string& node, bool api_ok = true) {
  (void)c;
  const PendingPod p = PendingPod::of(pod);
  book.reserve(p, node, p.requests);
  GroupBook::Gate gate = book.wait_at_gate(p);
  if (gate.ok && api_ok) book.commit(p);
  else book.roll_back(p);
  return gate;
}

// Another pod of `gpus` GPUs bound on `node`, as the watch shows it.
inline void occupy(Cluster& c, std::string_view uid, std::string_view node, int gpus) {
  PodRequest other = test_support::gpu_pod(gpus);
  other.uid = uid;
  other.name = uid;
  other.node_name = node;
  c.view->upsert_pod(test_write(), other);
}

inline LedgerOptions times(std::chrono::milliseconds ttl, std::chrono::milliseconds gate) {
  LedgerOptions o;
  o.group_ttl = ttl;
  o.group_gate = gate;
  return o;
}

// Waits until `what` holds (a member reached the gate), at most a few seconds.
inline void until(const std::function<bool()>& what) {
  for (int i = 0; i < 500 && !what(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(what());
}

}  // namespace group_book_support
using namespace group_book_support;
