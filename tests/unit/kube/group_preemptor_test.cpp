// Group preemption end to end in process (group_preemptor.h, the book's preempting stage): a group that
// fits nowhere asks for room, the preemptor evicts in one domain (dry runs first), the room is held over
// the victims while they terminate, the members wait, then the group is planned there; budgets, a
// refused eviction, priorities and preemptionPolicy: Never.
#include <catch2/catch.hpp>

#include <map>

#include "kube/api_evictor.h"
#include "kube/group_preemptor.h"
#include "state/group_book_support.h"

namespace {

using Kind = GroupBook::Admission::Kind;
using Stage = GroupBook::Stage;

// Evictions as the API server answers them: per pod name an outcome (default: evicted); real ones are
// recorded, and the pod is shown terminating in the view as the watch would show it.
struct FakeEvictor final : Evictor {
  std::map<std::string, Outcome> dry, real;  // by pod name
  std::vector<std::string> dry_runs, evicted, events;
  Result evict(const PreemptionVictim& v, bool dry_run) override {
    auto& table = dry_run ? dry : real;
    const auto it = table.find(v.name);
    const Outcome outcome = it == table.end() ? Outcome::kEvicted : it->second;
    (dry_run ? dry_runs : evicted).push_back(v.name);
    return {outcome, outcome == Outcome::kEvicted ? "" : "HTTP 429: Cannot evict pod as it would violate the pod's disruption budget."};
  }
  void record_preempted(const PreemptionVictim& v, const std::string& message) override {
    events.push_back(v.name + ": " + message);
  }
};

// A bound pod of `gpus` GPUs at `priority` on `node`, as the watch shows it.
struct Running {
  std::string uid, name, node;
  PodRequest pod;
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;
  Running(std::string n, std::string on, int gpus, int32_t priority) : uid("uid-" + n), name(std::move(n)), node(std::move(on)) {
    pod = test_support::gpu_pod(gpus);
    pod.uid = uid;
    pod.name = name;
    pod.ns = "batch";
    pod.node_name = node;
    pod.priority = priority;
  }
};

struct Bed {
  Cluster c = [] {
    Cluster cluster(std::vector<int>{4, 4, 2});  // nn-a 4 nodes, nn-b 4, nn-c 2
    cluster.view->keep_preemption_victims();     // as KubeConnection::preempt_for_groups does
    return cluster;
  }();
  std::shared_ptr<PlacementLedger> ledger = std::make_shared<PlacementLedger>(c.view);
  std::shared_ptr<FakeEvictor> evictor = std::make_shared<FakeEvictor>();
  kube::GroupPreemptor preemptor{ledger, evictor, std::make_shared<PolicyHolder>(c.policy), [] { return true; }};
  std::deque<Running> running;
  std::deque<Member> members;
  std::string size;  // the members' group size annotation: their pods point into it

  Running& run(const std::string& name, const std::string& node, int gpus, int32_t priority) {
    Running& r = running.emplace_back(name, node, gpus, priority);
    ledger->observe_pod(r.pod);
    return r;
  }
  void terminate(Running& r) {  // the watch shows it gone
    ledger->observe_pod_deleted(r.uid);
  }
  void add_members(int count, int32_t priority) {
    size = std::to_string(count);
    for (int i = 0; i < count; ++i) {
      Member& m = members.emplace_back(i, 8, size);
      m.pod.priority = priority;
    }
  }
  GroupBook::Admission admit_first() { return admit(*ledger, c, members[0].pod); }
};

}  // namespace

TEST_CASE("group preemptor: one victim makes nn-a whole, the room is held while it terminates, then planned") {
  Bed bed;
  Running& a3 = bed.run("low-a3", "nn-a-3", 8, 0);
  bed.run("low-b0", "nn-b-0", 8, 0);
  bed.run("low-b1", "nn-b-1", 8, 0);
  for (int i = 0; i < 4; ++i) bed.run("c" + std::to_string(i / 2) + std::to_string(i), "nn-c-" + std::to_string(i % 2), 4, 0);
  bed.add_members(4, 1000);
  GroupBook::Admission a = bed.admit_first();
  REQUIRE(a.kind == Kind::kRefused);
  CHECK(a.fit == Fit::kResolvable);
  CHECK(a.reason.find("may preempt") != std::string::npos);

  bed.preemptor.pass();
  CHECK(bed.evictor->dry_runs == std::vector<std::string>{"low-a3"});
  CHECK(bed.evictor->evicted == std::vector<std::string>{"low-a3"});
  REQUIRE(bed.evictor->events.size() == 1);
  CHECK(bed.evictor->events[0].find("Preempted by pod group default/llama (priority 1000)") != std::string::npos);
  const auto report = bed.ledger->group_report("default/llama");
  REQUIRE(report);
  CHECK(report->stage == Stage::kPreempting);
  CHECK(report->victims == std::vector<std::string>{"batch/low-a3"});
  CHECK(report->victims_left == 1);
  CHECK(bed.ledger->stats().groups.preemptions == 1);
  CHECK(bed.ledger->stats().groups.preemption_victims == 1);
  // Held at once, over the victim still there: nn-a counts its 8 GPUs and the group's 32.
  CHECK(bed.c.gpus_used_in('a') == 40);
  CHECK(bed.c.gpus_used_in('b') == 16);  // untouched

  // While it terminates, members wait with the victim named; nothing more is evicted.
  a = bed.admit_first();
  CHECK(a.kind == Kind::kRefused);
  CHECK(a.reason.find("1 of the 1 pod(s) of lower priority evicted for it or leaving its nodes still terminating (batch/low-a3)") !=
        std::string::npos);
  bed.preemptor.pass();
  CHECK(bed.evictor->evicted.size() == 1);

  // Gone: the room is planned, the members go to nn-a.
  bed.terminate(a3);
  a = bed.admit_first();
  REQUIRE(a.kind == Kind::kPlanned);
  CHECK(a.open == std::vector<std::string>{"nn-a-0", "nn-a-1", "nn-a-2", "nn-a-3"});
  CHECK(bed.ledger->group_report("default/llama")->stage == Stage::kPlanned);
  CHECK(bed.c.gpus_used_in('a') == 32);
}

TEST_CASE("group preemptor: a group that may not preempt, or outranks nobody, evicts nothing") {
  SECTION("preemptionPolicy: Never") {
    Bed bed;
    for (int i = 0; i < 4; ++i) bed.run("a" + std::to_string(i), "nn-a-" + std::to_string(i), 8, 0);
    for (int i = 0; i < 4; ++i) bed.run("b" + std::to_string(i), "nn-b-" + std::to_string(i), 8, 0);
    bed.add_members(4, 1000);
    for (Member& m : bed.members) m.pod.never_preempts = true;
    CHECK(bed.admit_first().reason.find("may preempt") == std::string::npos);
    bed.preemptor.pass();
    CHECK(bed.evictor->dry_runs.empty());
  }
  SECTION("the lowest priority") {
    Bed bed;
    for (int i = 0; i < 4; ++i) bed.run("a" + std::to_string(i), "nn-a-" + std::to_string(i), 8, 10);
    for (int i = 0; i < 4; ++i) bed.run("b" + std::to_string(i), "nn-b-" + std::to_string(i), 8, 10);
    bed.add_members(4, 10);  // equal: never a victim
    bed.admit_first();
    bed.preemptor.pass();
    CHECK(bed.evictor->dry_runs.empty());
    const auto report = bed.ledger->group_report("default/llama");
    CHECK(report->stage == Stage::kWaiting);
    CHECK(report->preemption_note.find("even with every pod it may preempt gone") != std::string::npos);
  }
}

TEST_CASE("group preemptor: a victim its budget protects (dry run refused) is replaced by the next best domain") {
  Bed bed;
  bed.run("guarded-a3", "nn-a-3", 8, 0);
  bed.run("low-b0", "nn-b-0", 8, 0);
  bed.run("low-b1", "nn-b-1", 8, 0);
  for (int i = 0; i < 2; ++i) bed.run("c" + std::to_string(i), "nn-c-" + std::to_string(i), 8, 0);
  bed.evictor->dry["guarded-a3"] = Evictor::Outcome::kBudgetRefused;
  bed.add_members(4, 1000);
  bed.admit_first();
  bed.preemptor.pass();
  CHECK(bed.evictor->evicted == std::vector<std::string>{"low-b0", "low-b1"});
  CHECK(bed.ledger->group_report("default/llama")->preempt_domain.find("nn-b") != std::string::npos);
}

TEST_CASE("group preemptor: an eviction refused after its dry run gives the room back and nothing is placed split") {
  Bed bed;
  bed.run("low-b0", "nn-b-0", 8, 0);
  bed.run("low-b1", "nn-b-1", 8, 0);
  for (int i = 0; i < 4; ++i) bed.run("a" + std::to_string(i), "nn-a-" + std::to_string(i), 8, 2000);
  bed.evictor->real["low-b1"] = Evictor::Outcome::kBudgetRefused;  // another eviction took the budget first
  bed.add_members(4, 1000);
  bed.admit_first();
  bed.preemptor.pass();
  const auto report = bed.ledger->group_report("default/llama");
  CHECK(report->stage == Stage::kWaiting);
  CHECK(report->preemption_note.find("low-b1 was refused") != std::string::npos);
  CHECK(bed.c.gpus_used_in('b') == 16);  // the room given back: only the pods count
  CHECK(bed.ledger->stats().groups.preemptions_failed == 1);
  CHECK(bed.ledger->stats().groups.preemption_victims == 1);  // low-b0 only: low-b1's eviction was refused
  CHECK(bed.admit_first().kind == Kind::kRefused);
}

TEST_CASE("group preemptor: the Eviction and the Preempted event as the API server takes them") {
  PreemptionVictim v;
  v.ns = "batch";
  v.name = "low-a3";
  v.uid = "uid-1";
  CHECK(kube::eviction_json(v) ==
        R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"low-a3","namespace":"batch"},)"
        R"("deleteOptions":{"preconditions":{"uid":"uid-1"}}})");
  const std::string event = kube::preempted_event_json(v, "Preempted by pod group a/b", "gpu-extender-0", "2026-12-07T10:00:00Z");
  CHECK(event.find(R"("involvedObject":{"apiVersion":"v1","kind":"Pod","namespace":"batch","name":"low-a3","uid":"uid-1"})") !=
        std::string::npos);
  CHECK(event.find(R"("reason":"Preempted")") != std::string::npos);
  CHECK(event.find(R"("generateName":"low-a3.")") != std::string::npos);
}

TEST_CASE("group preemptor: two groups wanting room at once get two domains, the second never the first's room") {
  Bed bed;
  bed.run("low-a3", "nn-a-3", 8, 0);
  bed.run("low-b0", "nn-b-0", 8, 0);
  bed.run("low-b1", "nn-b-1", 8, 0);
  bed.add_members(4, 1000);
  std::deque<Member> second;
  for (int i = 0; i < 4; ++i) {
    Member& m = second.emplace_back(10 + i, 8, bed.size);
    m.pod.group.name = "mistral";
    m.pod.priority = 900;
  }
  REQUIRE(bed.admit_first().kind == Kind::kRefused);
  REQUIRE(admit(*bed.ledger, bed.c, second[0].pod).kind == Kind::kRefused);
  bed.preemptor.pass();  // both looked at in one pass, the higher priority first
  const auto llama = bed.ledger->group_report("default/llama");
  const auto mistral = bed.ledger->group_report("default/mistral");
  REQUIRE(llama);
  REQUIRE(mistral);
  CHECK(llama->preempt_domain.find("nn-a") != std::string::npos);
  CHECK(mistral->preempt_domain.find("nn-b") != std::string::npos);
  CHECK(llama->victims == std::vector<std::string>{"batch/low-a3"});
  CHECK(mistral->victims == std::vector<std::string>{"batch/low-b0", "batch/low-b1"});
  CHECK(bed.evictor->evicted.size() == 3);  // each victim once
}

TEST_CASE("group preemptor: a victim deleted by someone else mid-way frees its room all the same") {
  Bed bed;
  Running& a3 = bed.run("low-a3", "nn-a-3", 8, 0);
  for (int i = 0; i < 4; ++i) bed.run("vip-b" + std::to_string(i), "nn-b-" + std::to_string(i), 8, 5000);
  bed.evictor->real["low-a3"] = Evictor::Outcome::kGone;  // deleted between its dry run and its eviction
  bed.add_members(4, 1000);
  bed.admit_first();
  bed.preemptor.pass();
  CHECK(bed.evictor->events.empty());  // not evicted by the extender: no event says it was
  CHECK(bed.ledger->group_report("default/llama")->stage == Stage::kPreempting);
  bed.terminate(a3);
  const GroupBook::Admission a = bed.admit_first();
  REQUIRE(a.kind == Kind::kPlanned);
  CHECK(a.open == std::vector<std::string>{"nn-a-0", "nn-a-1", "nn-a-2", "nn-a-3"});
}

TEST_CASE("group preemptor: room made that the scheduler never sends is given up after a while, and not made there again") {
  Bed bed;
  Running& a3 = bed.run("low-a3", "nn-a-3", 8, 0);
  for (int i = 0; i < 4; ++i) bed.run("vip-b" + std::to_string(i), "nn-b-" + std::to_string(i), 8, 5000);
  bed.add_members(4, 1000);
  bed.admit_first();
  bed.preemptor.pass();
  bed.terminate(a3);
  // The scheduler's own filters refuse block a (a taint the view cannot see): it sends only nn-c.
  bed.c.sent = {"nn-c-0", "nn-c-1"};
  GroupBook::Admission a = bed.admit_first();
  CHECK(a.kind == Kind::kRefused);
  CHECK(a.reason.find("waiting for the scheduler to see") != std::string::npos);
  CHECK(bed.c.gpus_used_in('a') == 32);  // still held: the scheduler's cache may lag
}
