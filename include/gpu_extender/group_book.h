#pragma once
// The groups being placed (distributed jobs, group_plan.h), and the room held for them.
//
// When a member of a group without a plan reaches /filter, the group is planned whole over the nodes
// the scheduler sent, and every member's node is held in the cluster view at once (as an in-flight
// placement), so that no other pod takes the group's room. Each member then passes only the planned
// nodes with a slot left; its /bind takes the slot (the hold is released as the pod itself is counted).
// The plan ends when every member is bound, or on a TTL after its last member was seen (the room comes
// back). Groups are planned one at a time, in the order their first member arrives.
//
// Members bound elsewhere (another binder, a restart of the extender) are read from the watch and
// counted where they are; after a restart a group's plan is rebuilt from them: the rest are planned in
// their domain if they fit there, else the unbound part as a whole.
//
// Thread-safe: one mutex over the book; the view has its own.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu_extender/cluster_view.h"
#include "gpu_extender/group_plan.h"

namespace gpu_extender {

class GroupBook {
 public:
  using Clock = std::chrono::steady_clock;
  GroupBook(std::shared_ptr<ClusterView> view, std::chrono::milliseconds ttl = std::chrono::minutes(2));

  // What a member's /filter and /prioritize follow.
  struct Admission {
    enum class Kind : uint8_t {
      kPlanned,     // pass only `open`
      kRefused,     // refuse every node with `reason` (no domain holds the group, or the pod is not understood)
      kBeyondSize,  // every member is bound already: this one is placed as a plain pod
    };
    Kind kind = Kind::kRefused;
    Fit fit = Fit::kResolvable;  // for kRefused: unresolvable when no capacity can help (a bad annotation)
    std::string reason;
    std::vector<std::string> open;  // kPlanned: the planned nodes with a slot left, sorted, each once
    std::string plan;               // kPlanned: where the group goes, for reasons ("nn-c: 3 nodes")
  };
  // A member of `spec` (or `spec_error` when its group annotations are not understood) at /filter or
  // /prioritize: its group's plan, made now if it has none, over `candidates()` (the nodes the
  // scheduler sent, with their usage: called only to plan, so a planned group's members skip it).
  using Candidates = std::function<std::span<const NodeInput>()>;
  Admission admit(const PodRequest& pod, const GroupSpec& spec, const std::string& spec_error, const Policy& policy,
                  const Candidates& candidates);
  // Member `pod` was bound to `node` by /bind: it takes a slot there (or, elsewhere, the last one left).
  // Called as /bind counts the pod on its node, before the API call.
  void bound(const PendingPod& pod, const std::string& node);
  // Its bind failed: the slot it took is held again (when its group is still being placed).
  void unbound(const PendingPod& pod);
  // Groups whose last member was seen more than the TTL ago give their room back; how many did.
  size_t expire(Clock::time_point now = Clock::now());

  // A group's state, for /explain and logs.
  struct Report {
    GroupSpec spec;
    GroupPlan plan;  // the last planning (or attempt)
    struct Slot {
      std::string node, member;  // member: the uid that took it, "" while open
    };
    std::vector<Slot> slots;
    size_t bound = 0;
    double seconds_since_first = 0;
  };
  std::optional<Report> report(const std::string& key) const;

  struct Stats {
    uint64_t planned = 0, placed = 0, expired = 0;
    std::map<std::string, uint64_t> waiting;  // refusals of a member, by reason: no_domain, no_room, invalid
    int64_t reserved_gpus_milli = 0;          // held for members still to place
    size_t groups = 0;                        // known to the book now
    double last_planning_seconds = 0;
  };
  Stats stats() const;
  // Called with the seconds from a group's first member to its last bind, as each group is placed.
  void on_placed(std::function<void(double)> observer);
  std::chrono::milliseconds ttl() const { return ttl_; }

 private:
  struct Slot {
    std::string node, hold_key, member;
  };
  struct Group {
    GroupSpec spec;
    PodFacts member;
    GroupPlan plan;
    std::vector<Slot> slots;
    std::unordered_map<std::string, std::string> bound;  // uid -> node
    Clock::time_point first_seen, last_seen;
  };
  // Members the watch shows bound that the book has not counted: they take their slots.
  void reconcile(Group& group);
  void take_slot(Group& group, const std::string& uid, const std::string& node);
  void release_all(Group& group);
  // A new plan for `group`'s members still to place, holding its room; false with `reason` when none.
  bool plan(Group& group, const Policy& policy, const Candidates& candidates, std::string& reason,
            std::string& reason_kind);
  Admission planned_admission(const Group& group) const;

  std::shared_ptr<ClusterView> view_;
  std::chrono::milliseconds ttl_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Group> groups_;
  uint64_t next_hold_ = 0;
  Stats stats_;
  std::function<void(double)> on_placed_;
};

}  // namespace gpu_extender
