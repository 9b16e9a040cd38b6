#pragma once
// The groups being placed (distributed jobs, group_plan.h): each group's life, and the room held for it.
// A part of the placement ledger (placement_ledger.h): every operation below is one step of the life,
// called under the ledger's lock, which is also the lock the gate waits with.
//
// A group's life (its stage, GroupBook::Stage):
//
//   waiting --plan--> planned --a member reaches /bind--> gathering --the last one does--> binding
//      ^                 |  ^                                 |                               |
//      |                 |  +----- the gate times out --------+                               |
//      |                 |        (each waiting member is refused: none bound)        all bound: placed
//      +--- no room -----+                                                            (the book forgets it)
//   Any stage but binding: no progress for the TTL -> expired (its room given back, the book forgets it).
//
//   waiting, and the group may preempt --the preemptor evicts for it--> preempting --its victims gone--> planned
//
//   - preempting (group_preemption.h): no domain holds the group, its members may preempt (priority
//     above the victims', preemptionPolicy not Never) and the preemptor (kube/group_preemptor.h) found
//     one domain where evicting pods of lower priority makes it fit. The room is held there at once (the
//     slots of a plan, counted over the victims still terminating, so no other pod takes it) and members
//     are refused, with the victims still to leave, until every victim is gone; then it is planned.
//     While they terminate nothing more is evicted for the group. An eviction refused (a
//     PodDisruptionBudget) gives the room back: the group is preempted for anew. Room made that the
//     scheduler then does not send (its own filters refuse those nodes: a taint, affinity, CPU) for
//     kRoomUnusedAfter moves the plan as any plan moves, and that domain is not preempted in again.
//
//   - planned: a member's /filter found no plan, so the members still to place were planned over the
//     nodes the scheduler sent (group_plan.h) and every open slot's room is counted on its node at once
//     (ClusterView::count_in_flight), so that no other pod takes the group's room. A member then passes
//     only the planned nodes with a slot left.
//   - moved: a member's /filter does not send any planned node with a slot left: the scheduler's own
//     filters refused them (CPU, memory, the members' own anti-affinity, a taint), or the node is gone,
//     or its sample left them out. The open slots are dropped and the members still to place are
//     planned again over what was sent; a group whose members passed in one domain stays in that domain
//     when its constraint is required, never split. When that domain has no room and no member is
//     bound yet, the members at the gate are sent back (their binds refused) and the whole group is
//     planned anew; with members bound, the rest wait there.
//   - gathering: nothing of a group is bound until every member has passed the scheduler's own filters
//     on its node, as coscheduling's Permit does inside the scheduler. The extender sees a member pass
//     when its /bind comes: that /bind waits at the group's gate (reserve()), its slot taken, for at most
//     the gate time (--group-gate-ms, below the scheduler's httpTimeout, so the answer comes before the
//     scheduler gives up on it). The last member opens the gate: all bind. A gate that times out refuses
//     the waiting member's bind (the scheduler forgets it and retries after its backoff) and holds its
//     slot again: all or none.
//   - binding: a bind the API then refuses gives the member's slot back, held again: it is planned
//     there on its retry. The group is placed when every member is bound.
//   - TTL: counts time without progress (no member passed or bound), not since a member was last seen.
//
// Members come and go through the watch: bound members the book did not bind (another replica, a
// restart) take their slots; terminating pods (deletionTimestamp), finished and deleted ones leave, so
// a replacement the Job controller makes while the old pod terminates is planned in the group's domain.
// A group name reused by a new set of pods while the old set still runs: the new pods find every member
// place taken and wait, with that reason, until the old pods are terminating or gone.
//
// Not thread-safe on its own: the ledger's lock guards it.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/policy/group_plan.h"
#include "gpu_extender/policy/group_preemption.h"

namespace gpu_extender {

class GroupBook {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Stage : uint8_t { kWaiting, kPreempting, kPlanned, kGathering, kBinding };
  static const char* stage_name(Stage stage);

  struct Options {
    std::chrono::milliseconds ttl{120000}, gate{4000};
    bool preemption = true;  // groups that fit nowhere ask for room (groups_wanting_room)
    // Victims still terminating after this give the room back (a grace period longer than any sane one).
    std::chrono::milliseconds preemption_wait{600000};
  };
  GroupBook(std::shared_ptr<ClusterView> view, Options options);

  // What a member's /filter and /prioritize follow.
  struct Admission {
    enum class Kind : uint8_t {
      kPlanned,  // pass only `open`
      kRefused,  // refuse every node with `reason` (no domain holds the group, every member's place is
                 // taken, or the pod is not understood)
    };
    Kind kind = Kind::kRefused;
    Fit fit = Fit::kResolvable;  // for kRefused: unresolvable when no capacity can help (a bad annotation)
    std::string reason;
    std::vector<std::string> open;  // kPlanned: the planned nodes with a slot left, sorted, each once
    std::string plan;               // kPlanned: where the group goes, for reasons ("nn-c: 3 nodes")
    // kRefused while the pods evicted for the group terminate: their deletions may be on their way to
    // the watch (the scheduler retries the member on the deletion it saw), so /filter catches up first.
    bool victims_leaving = false;
  };
  // The request's nodes with their usage (the planning candidates), read only to plan, under the
  // book's lock, so that two groups planned at once see each other's holds.
  using Candidates = std::function<std::span<const NodeInput>()>;
  // Whether the scheduler sent any of these nodes (sorted) in this request. Called with the plan's open
  // nodes; the caller may answer true without looking and ask again with its answer when its own pass
  // over the request finds none of them (judge_group_member does: its verdict pass finds them anyway).
  using AnySent = std::function<bool(std::span<const std::string> nodes)>;
  // A member of `spec` (refused, when its group annotations are not understood: invalid_reason) at /filter or
  // /prioritize: its group's plan, made now if it has none or if the scheduler no longer sends any of
  // its open slots' nodes (`any_sent`).
  Admission admit(const PodRequest& pod, const GroupSpec& spec, const Policy& policy,
                  const Candidates& candidates, const AnySent& any_sent);

  // /bind of member `pod` to `node`, in two steps. reserve(): it takes a slot there (or, elsewhere, the
  // last one left), called as the pod is counted on its node (the next member's /filter must not see
  // both the pod and the room held for it); the last member to pass opens the gate. Then
  // wait_at_gate(): until every member has passed, then it may bind (ok), or until the gate time passes
  // (not ok, with the reason: nothing of the group was bound). A pod of no group the book is placing
  // binds at once.
  struct Gate {
    bool ok = true;
    std::string reason;
  };
  void reserve(const PendingPod& pod, const std::string& node);
  // `lock`: the ledger's, held on entry and on return; released while waiting.
  Gate wait_at_gate(const PendingPod& pod, std::unique_lock<std::mutex>& lock);
  // After the gate: its bind succeeded (the group is placed once all have), or failed at the API (its
  // slot is held again for its retry; nothing to do for a member the gate refused).
  void commit(const PendingPod& pod);
  void roll_back(const PendingPod& pod);
  // Groups without progress for more than the TTL give their room back; how many did.
  size_t expire(Clock::time_point now = Clock::now());

  // --- group preemption: what the preemptor (kube/group_preemptor.h) asks and tells ---
  // The groups that found no room and whose members may preempt, not asked for lately: the highest
  // priority first.
  struct RoomWanted {
    GroupSpec spec;
    PodFacts member;
    int32_t priority = 0;
    int64_t needed = 0;  // members still to place
    std::vector<std::string> bound_nodes;  // where the members that passed are
    std::vector<std::string> avoid;        // domains where room made went unused
  };
  std::vector<RoomWanted> groups_wanting_room(Clock::time_point now = Clock::now());
  // The preemptor found room by evicting `plan.victims`: held now (true), or not (the group is gone,
  // placed or planned meanwhile, or the room is no longer there on the view as it is now: nothing may be
  // evicted for it).
  bool hold_for_preemption(const std::string& key, const GroupPreemptionPlan& plan, const Policy& policy);
  // Nothing can be evicted for the group (why, for explain), or an eviction failed: the room held for
  // it, if any, is given back and it is asked for again later.
  void preemption_failed(const std::string& key, const std::string& why);
  // One of the victims was evicted (the Eviction API accepted it): counted in Stats::preemption_victims.
  void victim_evicted();

  // A group's state, for /explain and logs.
  struct Report {
    GroupSpec spec;
    GroupPlan plan;  // the last planning (or attempt)
    Stage stage = Stage::kWaiting;
    struct Slot {
      std::string node, member;  // member: the uid that took it, "" while open
    };
    std::vector<Slot> slots;
    size_t bound = 0, passed = 0;  // passed: bound, binding or waiting at the gate
    double seconds_since_first = 0;
    std::string waiting;  // why, in stage kWaiting
    // Preemption: the domain room is made in and its victims ("namespace/name"), those still to leave,
    // and the last attempt's outcome when none could be chosen.
    std::string preempt_domain;
    std::vector<std::string> victims;
    size_t victims_left = 0;
    std::string preemption_note;
  };
  std::optional<Report> report(const std::string& key) const;

  struct Stats {
    uint64_t planned = 0, placed = 0, expired = 0;
    uint64_t moved = 0;        // plans made again because the scheduler no longer sent their nodes
    uint64_t gate_timeouts = 0;  // member binds refused because the rest of the group did not come
    uint64_t preemptions = 0, preemption_victims = 0;  // rooms made by eviction, and the pods evicted (accepted)
    uint64_t preemptions_failed = 0;                   // rooms given back (an eviction refused, victims too slow)
    std::map<std::string, uint64_t> waiting;  // refusals of a member, by reason: no_domain, no_room, invalid, full
    int64_t reserved_gpus_milli = 0;          // held for members still to place
    size_t groups = 0;                        // known to the book now
    double last_planning_seconds = 0;
  };
  Stats stats() const;
  // Called with the seconds from a group's first member to its last bind, as each group is placed.
  void on_placed(std::function<void(double)> observer);
  std::chrono::milliseconds ttl() const { return ttl_; }
  std::chrono::milliseconds gate() const { return gate_; }

 private:
  struct Slot {
    std::string node, member;  // member: "" while open (then its room is counted on its node)
  };
  struct Member {
    enum class Step : uint8_t { kAtGate, kBinding, kBound };
    std::string node;
    Step step = Step::kAtGate;
    bool seen_in_watch = false;  // bound, and the watch has shown it so
  };
  struct Group {
    GroupSpec spec;
    PodFacts member;
    GroupPlan plan;
    std::vector<Slot> slots;
    std::unordered_map<std::string, Member> members;  // by uid: every member that has passed
    Clock::time_point first_seen, last_progress;
    std::string waiting;  // why no plan, while none
    bool gone = false;    // expired or placed: a member still at its gate is refused
    std::set<std::string> sent_back;  // members taken from the gate by a new plan: their binds are refused
    // Preemption: the members' priority, and whether they may preempt (the last member seen says).
    int32_t priority = 0;
    bool may_preempt = false;
    bool wants_room = false;           // found no room: the preemptor's cue
    Clock::time_point room_asked_at{};  // when the preemptor last took the cue
    struct Preempting {
      std::string domain;
      std::vector<PreemptionVictim> victims;  // evicted for it
      std::vector<PreemptionVictim> leaving;  // terminating already on its nodes: waited for too
      Clock::time_point since;
    };
    std::optional<Preempting> preempting;
    std::string room_made_in;         // the domain, once its victims are gone, until a member passes there
    Clock::time_point room_ready_at;  // when they were seen gone
    std::vector<std::string> avoid;   // domains where room made went unused
    std::string preemption_note;
  };
  using GroupPtr = std::shared_ptr<Group>;
  static Stage stage_of(const Group& group);
  static size_t count(const Group& group, Member::Step step);
  static double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  // Members the watch shows bound take their slots; members it showed and no longer shows leave.
  void reconcile(Group& group);
  Slot* take_slot(Group& group, const std::string& uid, const std::string& node);
  void count_held(const Group& group, const std::string& node, bool add);  // a slot's room on its node
  void hold_again(Group& group, const std::string& uid);  // the member's slot, open again
  void release_open(Group& group);                        // every open slot's room, and the slots
  void forget(std::unordered_map<std::string, GroupPtr>::iterator it);
  std::pair<Group*, Member*> member_of(const PendingPod& pod);
  // The plan moves whole: members waiting at the gate (none bound) give their places up.
  void send_back_from_gate(Group& group);
  // A new plan for `group`'s members still to place, holding its room; false when none (the reason in
  // group.waiting and group.plan, whose waiting_kind the metrics count).
  bool plan(Group& group, const Policy& policy, const Candidates& candidates);
  static const char* waiting_kind(const GroupPlan& plan);
  Admission planned_admission(const Group& group) const;

  static constexpr std::chrono::seconds kRoomUnusedAfter{10};
  // Room made by eviction whose nodes the member's request lacks: refused while the scheduler may not
  // have seen the victims gone (kRoomUnusedAfter), then that domain is avoided and the plan moves.
  std::optional<Admission> room_not_seen_yet(Group& group);
  // Whether every slot node of `found` still has room for its members once the victims and the pods
  // leaving are gone, on the view as it is now.
  bool room_still_there(const Group& group, const GroupPreemptionPlan& found, const Policy& policy) const;
  // Preempting: refused with the victims still to leave; nullopt once all are gone (then planned).
  std::optional<Admission> while_preempting(Group& group, const Policy& policy);
  // No room: the group asks for some when its members may preempt.
  void want_room(Group& group, const PodRequest& pod);

  std::shared_ptr<ClusterView> view_;
  std::chrono::milliseconds ttl_, gate_;
  bool preemption_;
  std::chrono::milliseconds preemption_wait_;
  std::condition_variable gate_changed_;  // a gate opened, or a group was forgotten (waited with the ledger's lock)
  std::unordered_map<std::string, GroupPtr> groups_;
  Stats stats_;
  std::function<void(double)> on_placed_;
};

}  // namespace gpu_extender
