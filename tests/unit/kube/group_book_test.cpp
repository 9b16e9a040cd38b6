// The group book (group_book.h): a plan's room held in the cluster view until members bind, given back
// on the TTL, and rebuilt from the watch after a restart.
#include <catch2/catch.hpp>

#include <deque>

#include "../test_support.h"
#include "gpu_extender/group_book.h"

using namespace gpu_extender;

namespace {

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
        view->upsert_node(n);
        cached.push_back(CachedNode::copy_of(n));
      }
  }
  // What the scheduler sends: every node, with the view's usage as of now.
  std::span<const NodeInput> candidates() {
    inputs.clear();
    used.clear();
    for (const auto& node : cached) used.push_back(view->used_on(node->view().name).value_or(ResourceAmounts{}));
    for (size_t i = 0; i < cached.size(); ++i) inputs.emplace_back(&cached[i]->view(), &used[i]);
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

GroupBook::Admission admit(GroupBook& book, Cluster& c, const PodRequest& pod) {
  std::string error;
  const auto spec = group_spec_of(pod, c.policy->schema(), error);
  REQUIRE(spec);
  return book.admit(pod, *spec, error, *c.policy, [&] { return c.candidates(); });
}

}  // namespace

TEST_CASE("group book: the plan's room is held at once, each bind takes its slot, the last ends the plan") {
  Cluster c(2, 3);
  GroupBook book(c.view);
  std::vector<double> placed;
  book.on_placed([&](double seconds) { placed.push_back(seconds); });
  std::deque<Member> members;
  for (int i = 0; i < 3; ++i) members.emplace_back(i, 8, "3");

  GroupBook::Admission a = admit(book, c, members[0].pod);
  REQUIRE(a.kind == GroupBook::Admission::Kind::kPlanned);
  CHECK(a.open == std::vector<std::string>{"nn-a-0", "nn-a-1", "nn-a-2"});  // equal fits: by name
  CHECK(c.gpus_used_in('a') == 24);  // held for all three at once
  CHECK(book.stats().reserved_gpus_milli == 24000);
  CHECK(book.stats().planned == 1);

  // A second member sees the same plan; a plain pod would now find nn-a full.
  CHECK(admit(book, c, members[1].pod).open == a.open);
  CHECK(book.stats().planned == 1);

  // Binds: the pod is assumed (as /bind does), then takes its slot, which stops being held.
  PendingPod w0 = PendingPod::of(members[0].pod);
  c.view->assume_pod(w0.uid, "nn-a-1", w0.requests);
  book.bound(w0, "nn-a-1");
  CHECK(c.gpus_used("nn-a-1") == 8);  // the pod, not the pod and its slot
  CHECK(admit(book, c, members[1].pod).open == std::vector<std::string>{"nn-a-0", "nn-a-2"});
  for (int i = 1; i < 3; ++i) {
    PendingPod w = PendingPod::of(members[static_cast<size_t>(i)].pod);
    const std::string node = i == 1 ? "nn-a-0" : "nn-a-2";
    c.view->assume_pod(w.uid, node, w.requests);
    book.bound(w, node);
  }
  CHECK(c.gpus_used_in('a') == 24);
  CHECK(book.stats().placed == 1);
  CHECK(book.stats().groups == 0);
  CHECK(book.stats().reserved_gpus_milli == 0);
  REQUIRE(placed.size() == 1);
  CHECK(placed[0] >= 0);
}

TEST_CASE("group book: no domain holds the group: refused with the reason, nothing held, and the same on retry") {
  Cluster c(2, 2);
  GroupBook book(c.view);
  Member m(0, 8, "3");
  for (int attempt = 0; attempt < 2; ++attempt) {
    const GroupBook::Admission a = admit(book, c, m.pod);
    CHECK(a.kind == GroupBook::Admission::Kind::kRefused);
    CHECK(a.fit == Fit::kResolvable);
    CHECK(a.reason ==
          "group default/llama (3 pods x 8 nvidia.com/gpu) needs one topology.k8s.aws/network-node-layer-3 domain; "
          "the best, nn-a, has room for 2");
    CHECK(c.gpus_used_in('a') + c.gpus_used_in('b') == 0);
  }
  CHECK(book.stats().waiting.at("no_domain") == 2);
  CHECK(book.stats().planned == 0);
}

TEST_CASE("group book: a member asking other resources than its group is refused, unresolvable") {
  Cluster c(1, 4);
  GroupBook book(c.view);
  REQUIRE(admit(book, c, Member(0, 8, "2").pod).kind == GroupBook::Admission::Kind::kPlanned);
  const GroupBook::Admission a = admit(book, c, Member(1, 4, "2").pod);
  CHECK(a.kind == GroupBook::Admission::Kind::kRefused);
  CHECK(a.fit == Fit::kUnresolvable);
  CHECK(a.reason.find("the members of a group are alike") != std::string::npos);
}

TEST_CASE("group book: the TTL after the last member was seen gives the room back") {
  Cluster c(1, 4);
  GroupBook book(c.view, std::chrono::seconds(120));
  REQUIRE(admit(book, c, Member(0, 8, "4").pod).kind == GroupBook::Admission::Kind::kPlanned);
  CHECK(c.gpus_used_in('a') == 32);
  CHECK(book.expire(GroupBook::Clock::now() + std::chrono::seconds(60)) == 0);
  CHECK(c.gpus_used_in('a') == 32);
  CHECK(book.expire(GroupBook::Clock::now() + std::chrono::seconds(121)) == 1);
  CHECK(c.gpus_used_in('a') == 0);
  CHECK(book.stats().expired == 1);
  CHECK(book.stats().groups == 0);
}

// Two of four members bound in nn-b before the restart, as the watch shows them, to a new book.
void bind_two_in_nn_b(Cluster& c) {
  for (int i = 0; i < 2; ++i) {
    Member m(i, 8, "4");
    m.node = "nn-b-" + std::to_string(i);
    m.pod.node_name = m.node;
    m.pod.phase = "Running";
    c.view->upsert_pod(m.pod);
  }
}

TEST_CASE("group book: after a restart the plan is rebuilt from the watch: the rest join the bound members") {
  Cluster c(std::vector<int>{2, 5});  // for two members alone nn-a is the better fit (0 GPUs left, against nn-b's 8)
  bind_two_in_nn_b(c);
  GroupBook book(c.view);
  const GroupBook::Admission a = admit(book, c, Member(2, 8, "4").pod);
  REQUIRE(a.kind == GroupBook::Admission::Kind::kPlanned);
  CHECK(a.open == std::vector<std::string>{"nn-b-2", "nn-b-3"});
  const auto r = book.report("default/llama");
  REQUIRE(r);
  CHECK(r->bound == 2);
  CHECK(r->slots.size() == 2);
}

TEST_CASE("group book: after a restart, when the rest no longer fit beside the bound members, they are planned as a whole") {
  Cluster c(std::vector<int>{3, 3});
  bind_two_in_nn_b(c);  // nn-b has room for one more only
  GroupBook book(c.view);
  const GroupBook::Admission a = admit(book, c, Member(2, 8, "4").pod);
  REQUIRE(a.kind == GroupBook::Admission::Kind::kPlanned);
  CHECK(a.open == std::vector<std::string>{"nn-a-0", "nn-a-1"});
}
