// The group book (group_book.h), through the placement ledger that owns it: a test per step of a group's
// life. The plan's room held in the cluster view; members wait at the gate until all have passed, then
// bind; a plan the scheduler no longer sends
// moves; required groups never split; the TTL counts time without progress; members that terminate
// leave, and their replacement joins the group's domain; a plan is rebuilt from the watch after a restart.
#include <catch2/catch.hpp>

#include <future>

#include "group_book_support.h"
#include "state/cluster_view_writes.h"

using namespace gpu_extender;

namespace {

using Kind = GroupBook::Admission::Kind;
using Stage = GroupBook::Stage;

}  // namespace

TEST_CASE("group book: planned: the room is held at once, members wait at the gate until the last passes, then all bind") {
  Cluster c(2, 3);
  PlacementLedger book(c.view);
  std::vector<double> placed;
  book.on_group_placed([&](double seconds) { placed.push_back(seconds); });
  std::deque<Member> members;
  for (int i = 0; i < 3; ++i) members.emplace_back(i, 8, "3");

  const GroupBook::Admission a = admit(book, c, members[0].pod);
  REQUIRE(a.kind == Kind::kPlanned);
  CHECK(a.open == std::vector<std::string>{"nn-a-0", "nn-a-1", "nn-a-2"});  // equal fits: by name
  CHECK(c.gpus_used_in('a') == 24);  // held for all three at once
  CHECK(book.stats().groups.reserved_gpus_milli == 24000);
  CHECK(book.group_report("default/llama")->stage == Stage::kPlanned);
  CHECK(admit(book, c, members[1].pod).open == a.open);  // the same plan for the next member
  CHECK(book.stats().groups.planned == 1);

  // The first two reach /bind: each takes its slot (the pod, not the pod and its slot, is counted) and waits.
  auto first = std::async(std::launch::async, [&] { return bind(book, c, members[0].pod, "nn-a-1"); });
  until([&] { return book.group_report("default/llama")->passed == 1; });
  CHECK(c.gpus_used("nn-a-1") == 8);
  CHECK(book.group_report("default/llama")->stage == Stage::kGathering);
  CHECK(admit(book, c, members[1].pod).open == std::vector<std::string>{"nn-a-0", "nn-a-2"});
  auto second = std::async(std::launch::async, [&] { return bind(book, c, members[1].pod, "nn-a-0"); });
  until([&] { return book.group_report("default/llama")->passed == 2; });
  CHECK(first.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);  // still at the gate
  CHECK(book.group_report("default/llama")->bound == 0);  // nothing of the group is bound yet

  // The last opens the gate: all three bind.
  CHECK(bind(book, c, members[2].pod, "nn-a-2").ok);
  CHECK(first.get().ok);
  CHECK(second.get().ok);
  CHECK(c.gpus_used_in('a') == 24);
  CHECK(book.stats().groups.placed == 1);
  CHECK(book.stats().groups.groups == 0);
  CHECK(book.stats().groups.reserved_gpus_milli == 0);
  CHECK(book.stats().groups.gate_timeouts == 0);
  REQUIRE(placed.size() == 1);
  CHECK(placed[0] >= 0);
}

TEST_CASE("group book: gathering: a gate the rest do not reach in time refuses the bind, and the slot is held again") {
  Cluster c(1, 3);
  PlacementLedger book(c.view, times(std::chrono::minutes(2), std::chrono::milliseconds(100)));
  Member m0(0, 8, "3");
  REQUIRE(admit(book, c, m0.pod).kind == Kind::kPlanned);
  const GroupBook::Gate gate = bind(book, c, m0.pod, "nn-a-0");
  CHECK_FALSE(gate.ok);
  CHECK(gate.reason ==
        "group default/llama: 1 of 3 members passed the scheduler's filters on their planned nodes within 100 ms of "
        "this one; none of them is bound until all have (all or nothing), so this bind is refused and the scheduler "
        "tries the pod again");
  CHECK(c.gpus_used_in('a') == 24);  // its slot is held again, the pod no longer counted
  CHECK(book.group_report("default/llama")->passed == 0);
  CHECK(book.group_report("default/llama")->stage == Stage::kPlanned);
  CHECK(book.stats().groups.gate_timeouts == 1);
  // Its retry is planned on the same nodes.
  CHECK(admit(book, c, m0.pod).open == std::vector<std::string>{"nn-a-0", "nn-a-1", "nn-a-2"});
}

TEST_CASE("group book: --group-gate-ms 0: each member binds as it comes") {
  Cluster c(1, 2);
  PlacementLedger book(c.view, times(std::chrono::minutes(2), std::chrono::milliseconds(0)));
  Member m0(0, 8, "2"), m1(1, 8, "2");
  REQUIRE(admit(book, c, m0.pod).kind == Kind::kPlanned);
  CHECK(bind(book, c, m0.pod, "nn-a-0").ok);
  CHECK(book.group_report("default/llama")->bound == 1);
  CHECK(bind(book, c, m1.pod, "nn-a-1").ok);
  CHECK(book.stats().groups.placed == 1);
}

TEST_CASE("group book: moved: planned nodes the scheduler no longer sends (its own filters refused them) are planned again in the group's domain") {
  // Two members fit a node by GPUs (4 of 8 each), so both are planned on one node; the scheduler's own CPU
  // check refuses the second there once the first is assumed.
  Cluster c(std::vector<int>{3, 4});
  occupy(c, "other", "nn-b-0", 4);  // nn-b-0 the fullest: planned first
  PlacementLedger book(c.view, times(std::chrono::minutes(2), std::chrono::seconds(5)));
  std::deque<Member> members;
  for (int i = 0; i < 4; ++i) members.emplace_back(i, 4, "4");
  const GroupBook::Admission a = admit(book, c, members[0].pod);
  REQUIRE(a.kind == Kind::kPlanned);
  REQUIRE(a.open == std::vector<std::string>{"nn-a-0", "nn-a-1"});  // 2 x 2 members in nn-a, the best fit
  auto first = std::async(std::launch::async, [&] { return bind(book, c, members[0].pod, "nn-a-0"); });
  until([&] { return book.group_report("default/llama")->passed == 1; });
  c.sent = {"nn-a-1", "nn-a-2", "nn-b-1", "nn-b-2", "nn-b-3"};  // nn-a-0: its CPU is taken
  CHECK(admit(book, c, members[1].pod).open == std::vector<std::string>{"nn-a-0", "nn-a-1"});  // nn-a-1 was sent
  auto second = std::async(std::launch::async, [&] { return bind(book, c, members[1].pod, "nn-a-1"); });
  until([&] { return book.group_report("default/llama")->passed == 2; });
  // The third member: neither planned node is sent (each has a member now). Planned again, in nn-a.
  c.sent = {"nn-a-2", "nn-b-1", "nn-b-2", "nn-b-3"};
  const GroupBook::Admission moved = admit(book, c, members[2].pod);
  REQUIRE(moved.kind == Kind::kPlanned);
  CHECK(moved.open == std::vector<std::string>{"nn-a-2"});
  CHECK(book.stats().groups.moved == 1);
  CHECK(c.gpus_used("nn-a-0") == 4);  // the open slots there were given back: only the member counts
  auto third = std::async(std::launch::async, [&] { return bind(book, c, members[2].pod, "nn-a-2"); });
  until([&] { return book.group_report("default/llama")->passed == 3; });
  CHECK(bind(book, c, members[3].pod, "nn-a-2").ok);
  CHECK(first.get().ok);
  CHECK(second.get().ok);
  CHECK(third.get().ok);
  CHECK(c.gpus_used_in('a') == 16);
  CHECK(c.gpus_used_in('b') == 4);  // only the other pod
  CHECK(book.stats().groups.placed == 1);
}

TEST_CASE("group book: moved whole: no room beside the members at the gate, none bound: they are sent back and the group planned anew") {
  Cluster c(std::vector<int>{2, 4});
  PlacementLedger book(c.view, times(std::chrono::minutes(2), std::chrono::seconds(5)));
  std::deque<Member> members;
  for (int i = 0; i < 2; ++i) members.emplace_back(i, 8, "2");
  REQUIRE(admit(book, c, members[0].pod).open == std::vector<std::string>{"nn-a-0", "nn-a-1"});
  auto first = std::async(std::launch::async, [&] { return bind(book, c, members[0].pod, "nn-a-0"); });
  until([&] { return book.group_report("default/llama")->passed == 1; });
  // nn-a-1 became unusable for the second member (the scheduler refuses it); nn-b has room for both.
  c.sent = {"nn-b-0", "nn-b-1", "nn-b-2", "nn-b-3"};
  const GroupBook::Admission a = admit(book, c, members[1].pod);
  REQUIRE(a.kind == Kind::kPlanned);
  CHECK(a.open == std::vector<std::string>{"nn-b-0", "nn-b-1"});
  const GroupBook::Gate sent_back = first.get();
  CHECK_FALSE(sent_back.ok);
  CHECK(sent_back.reason.find("was planned anew elsewhere while this member waited at its gate") != std::string::npos);
  CHECK(c.gpus_used_in('a') == 0);   // nothing held in nn-a, the first member no longer counted there
  CHECK(c.gpus_used_in('b') == 16);  // the new plan
  CHECK(book.stats().groups.moved == 1);
  // Both members then pass in nn-b, and bind.
  c.sent.clear();
  auto again = std::async(std::launch::async, [&] { return bind(book, c, members[0].pod, "nn-b-0"); });
  until([&] { return book.group_report("default/llama")->passed == 1; });
  CHECK(bind(book, c, members[1].pod, "nn-b-1").ok);
  CHECK(again.get().ok);
  CHECK(book.stats().groups.placed == 1);
}

TEST_CASE("group book: no domain holds the group: refused with the reason, nothing held, and the same on retry") {
  Cluster c(2, 2);
  PlacementLedger book(c.view);
  Member m(0, 8, "3");
  m.pod.never_preempts = true;  // preemptionPolicy: Never (preemption: group_book_preemption_test.cpp)
  for (int attempt = 0; attempt < 2; ++attempt) {
    const GroupBook::Admission a = admit(book, c, m.pod);
    CHECK(a.kind == Kind::kRefused);
    CHECK(a.fit == Fit::kResolvable);
    CHECK(a.reason ==
          "group default/llama (3 pods x 8 nvidia.com/gpu) needs one topology.k8s.aws/network-node-layer-3 domain; "
          "the best, nn-a, has room for 2");
    CHECK(c.gpus_used_in('a') + c.gpus_used_in('b') == 0);
  }
  CHECK(book.stats().groups.waiting.at("no_domain") == 2);
  CHECK(book.stats().groups.planned == 0);
  CHECK(book.group_report("default/llama")->stage == Stage::kWaiting);
  CHECK(book.group_report("default/llama")->waiting == "group default/llama (3 pods x 8 nvidia.com/gpu) needs one "
                                                 "topology.k8s.aws/network-node-layer-3 domain; the best, nn-a, has room for 2");
}

TEST_CASE("group book: a member asking other resources than its group is refused, unresolvable") {
  Cluster c(1, 4);
  PlacementLedger book(c.view);
  REQUIRE(admit(book, c, Member(0, 8, "2").pod).kind == Kind::kPlanned);
  const GroupBook::Admission a = admit(book, c, Member(1, 4, "2").pod);
  CHECK(a.kind == Kind::kRefused);
  CHECK(a.fit == Fit::kUnresolvable);
  CHECK(a.reason.find("the members of a group are alike") != std::string::npos);
}

TEST_CASE("group book: expired: the TTL counts time without progress, not since a member was last seen") {
  Cluster c(1, 4);
  PlacementLedger book(c.view, times(std::chrono::seconds(120), std::chrono::seconds(4)));
  Member m0(0, 8, "4");
  REQUIRE(admit(book, c, m0.pod).kind == Kind::kPlanned);
  CHECK(c.gpus_used_in('a') == 32);
  CHECK(book.expire(GroupBook::Clock::now() + std::chrono::seconds(60)).groups == 0);
  // Members seen again and again (the scheduler retrying them) are no progress.
  for (int i = 0; i < 3; ++i) REQUIRE(admit(book, c, m0.pod).kind == Kind::kPlanned);
  CHECK(c.gpus_used_in('a') == 32);
  CHECK(book.expire(GroupBook::Clock::now() + std::chrono::seconds(121)).groups == 1);
  CHECK(c.gpus_used_in('a') == 0);
  CHECK(book.stats().groups.expired == 1);
  CHECK(book.stats().groups.groups == 0);
}

TEST_CASE("group book: binding: a bind the API refuses after the gate holds its slot again for the retry") {
  Cluster c(1, 2);
  PlacementLedger book(c.view, times(std::chrono::minutes(2), std::chrono::seconds(5)));
  Member m0(0, 8, "2"), m1(1, 8, "2");
  REQUIRE(admit(book, c, m0.pod).kind == Kind::kPlanned);
  auto first = std::async(std::launch::async, [&] { return bind(book, c, m0.pod, "nn-a-0"); });
  until([&] { return book.group_report("default/llama")->passed == 1; });
  CHECK(bind(book, c, m1.pod, "nn-a-1", false).ok);  // through the gate; then the API refused it
  CHECK(first.get().ok);
  const auto r = book.group_report("default/llama");
  REQUIRE(r);  // not placed: one member is still to bind
  CHECK(r->bound == 1);
  CHECK(c.gpus_used("nn-a-1") == 8);  // held for it
  // Its retry: planned there, and the gate is open at once (every other member is bound).
  CHECK(admit(book, c, m1.pod).open == std::vector<std::string>{"nn-a-1"});
  CHECK(bind(book, c, m1.pod, "nn-a-1").ok);
  CHECK(book.stats().groups.placed == 1);
}

TEST_CASE("group book: a member terminating leaves the group, and its replacement is planned in the group domain") {
  Cluster c(std::vector<int>{3, 3});
  // A group of 2 placed in nn-b (the watch shows it), with nn-a empty and the better fit for one pod alone.
  std::deque<Member> members;
  for (int i = 0; i < 2; ++i) {
    members.emplace_back(i, 8, "2");
    members.back().pod.node_name = members.back().node = "nn-b-" + std::to_string(i);
    members.back().pod.phase = "Running";
    c.view->upsert_pod(test_write(), members.back().pod);
  }
  occupy(c, "other", "nn-a-0", 8);
  PlacementLedger book(c.view);
  Member replacement(2, 8, "2");
  // While both run, a third pod of the group finds every place taken.
  const GroupBook::Admission full = admit(book, c, replacement.pod);
  CHECK(full.kind == Kind::kRefused);
  CHECK(full.reason == "group default/llama (2 pods x 8 nvidia.com/gpu) has all 2 members placed or being bound; this "
                       "pod waits until one of them is terminating or gone");
  // The drain: w1 is terminating (it still holds its GPUs until it is gone).
  members[1].pod.terminating = true;
  c.view->upsert_pod(test_write(), members[1].pod);
  const GroupBook::Admission a = admit(book, c, replacement.pod);
  REQUIRE(a.kind == Kind::kPlanned);
  CHECK(a.open == std::vector<std::string>{"nn-b-2"});  // beside w0, not in nn-a
  CHECK(bind(book, c, replacement.pod, "nn-b-2").ok);  // the gate is open at once: w0 is bound
  CHECK(book.stats().groups.placed == 1);
}

// Two of four members bound in nn-b before the restart, as the watch shows them, to a new book.
void bind_two_in_nn_b(Cluster& c, std::string_view required = "topology.k8s.aws/network-node-layer-3") {
  for (int i = 0; i < 2; ++i) {
    Member m(i, 8, "4");
    m.node = "nn-b-" + std::to_string(i);
    m.pod.node_name = m.node;
    m.pod.phase = "Running";
    if (required.empty()) {
      m.pod.group.required_topology.reset();
      m.pod.group.preferred_topology = "topology.k8s.aws/network-node-layer-3";
    }
    c.view->upsert_pod(test_write(), m.pod);
  }
}

TEST_CASE("group book: after a restart the plan is rebuilt from the watch: the rest join the bound members") {
  Cluster c(std::vector<int>{2, 5});  // for two members alone nn-a is the better fit (0 GPUs left, against nn-b's 8)
  bind_two_in_nn_b(c);
  PlacementLedger book(c.view);
  const GroupBook::Admission a = admit(book, c, Member(2, 8, "4").pod);
  REQUIRE(a.kind == Kind::kPlanned);
  CHECK(a.open == std::vector<std::string>{"nn-b-2", "nn-b-3"});
  const auto r = book.group_report("default/llama");
  REQUIRE(r);
  CHECK(r->bound == 2);
  CHECK(r->slots.size() == 2);  // the two still to place
}

TEST_CASE("group book: after a restart, when the rest no longer fit beside the bound members: required waits, preferred is planned as a whole") {
  Cluster c(std::vector<int>{3, 3});
  bind_two_in_nn_b(c);  // nn-b has room for one more only
  PlacementLedger book(c.view);
  const GroupBook::Admission a = admit(book, c, Member(2, 8, "4").pod);
  CHECK(a.kind == Kind::kRefused);
  CHECK(a.reason.find("its members placed so far are in nn-b, which has room for 1 more") != std::string::npos);
  CHECK(c.gpus_used_in('a') == 0);

  Cluster p(std::vector<int>{3, 3});
  bind_two_in_nn_b(p, "");
  PlacementLedger preferred(p.view);
  Member m(2, 8, "4");
  m.pod.group.required_topology.reset();
  m.pod.group.preferred_topology = "topology.k8s.aws/network-node-layer-3";
  const GroupBook::Admission b = admit(preferred, p, m.pod);
  REQUIRE(b.kind == Kind::kPlanned);
  CHECK(b.open == std::vector<std::string>{"nn-a-0", "nn-a-1"});
}

TEST_CASE("group book: a pod in one of Kubernetes' own pod groups is left to the scheduler's gang scheduling") {
  Member m(0, 8, "4");
  m.pod.native_pod_group = true;
  CHECK_FALSE(group_spec_of(m.pod, test_support::default_policy()->schema()));
}

TEST_CASE("group book: a /bind that found no group to join binds at once, even if the group is made before it waits") {
  Cluster c(1, 3);  // the late pod counted on nn-a-0, the new plan on the other two
  PlacementLedger book(c.view, times(std::chrono::minutes(2), std::chrono::seconds(5)));
  Member late(0, 8, "2"), other(1, 8, "2");
  const PendingPod p = PendingPod::of(late.pod);
  book.reserve(p, "nn-a-0", p.requests);  // no group in the book (placed and forgotten, say)
  REQUIRE(admit(book, c, other.pod).kind == Kind::kPlanned);  // the same name planned anew meanwhile
  CHECK(book.wait_at_gate(p).ok);
  CHECK(book.stats().groups.gate_timeouts == 0);  // it did not wait the gate out
}
