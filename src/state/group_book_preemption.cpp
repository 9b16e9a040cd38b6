// A group's preempting stage (group_book.h): asking for room, holding it while the victims leave.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "gpu_extender/state/group_book.h"

namespace gpu_extender {
namespace {
// A group without room is looked at again this often: each look plans over the whole cluster.
constexpr auto kRoomRetry = std::chrono::seconds(5);
constexpr size_t kVictimsNamed = 5;  // in a refusal's reason
}  // namespace

void GroupBook::want_room(Group& group, const PodRequest& pod) {
  if (!preemption_ || !group.may_preempt) return;
  group.wants_room = true;
  group.waiting += "; its members (priority " + std::to_string(pod.priority) +
                   ") may preempt: the extender looks for one domain where evicting pods of lower priority makes room";
}

std::vector<GroupBook::RoomWanted> GroupBook::groups_wanting_room(Clock::time_point now) {
  std::vector<RoomWanted> out;
  for (auto& [key, group] : groups_) {
    Group& g = *group;
    if (!g.wants_room || g.preempting || !g.may_preempt || now - g.room_asked_at < kRoomRetry) continue;
    const bool open = std::any_of(g.slots.begin(), g.slots.end(), [](const Slot& s) { return s.member.empty(); });
    if (open || count(g, Member::Step::kAtGate) > 0 || count(g, Member::Step::kBinding) > 0) continue;
    g.room_asked_at = now;
    RoomWanted& w = out.emplace_back();
    w.spec = g.spec;
    w.member = g.member;
    w.priority = g.priority;
    w.needed = g.spec.size - static_cast<int64_t>(g.members.size());
    for (const auto& [uid, m] : g.members) w.bound_nodes.push_back(m.node);
    w.avoid = g.avoid;
  }
  // The most important group first: it chooses its room before a lower one can take it.
  std::sort(out.begin(), out.end(), [](const RoomWanted& a, const RoomWanted& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.spec.key < b.spec.key;
  });
  return out;
}

bool GroupBook::room_still_there(const Group& group, const GroupPreemptionPlan& found, const Policy& policy) const {
  std::map<std::string, int64_t> members_on;
  for (const std::string& node : found.slots) ++members_on[node];
  std::vector<std::string_view> names;
  names.reserve(members_on.size());
  for (const auto& [node, count] : members_on) names.push_back(node);
  std::vector<std::shared_ptr<const CachedNode>> nodes;
  view_->find_nodes(names, nodes);
  size_t i = 0;
  for (const auto& [node, count] : members_on) {
    const std::shared_ptr<const CachedNode>& cached = nodes[i++];
    if (!cached) return false;
    ResourceAmounts used = view_->used_on(node).value_or(ResourceAmounts{});
    for (const auto* list : {&found.victims, &found.leaving})
      for (const PreemptionVictim& v : *list)
        if (v.node == node) used.subtract(v.requests);
    const NodeInput probe(&cached->view(), &used);
    if (members_room(policy, group.member, probe, count) < count) return false;
  }
  return true;
}

bool GroupBook::hold_for_preemption(const std::string& key, const GroupPreemptionPlan& found, const Policy& policy) {
  auto it = groups_.find(key);
  if (it == groups_.end()) return false;
  Group& group = *it->second;
  const int64_t needed = group.spec.size - static_cast<int64_t>(group.members.size());
  const bool open = std::any_of(group.slots.begin(), group.slots.end(), [](const Slot& s) { return s.member.empty(); });
  if (!group.wants_room || group.preempting || open || static_cast<int64_t>(found.slots.size()) != needed) return false;
  // The plan was made on a snapshot, before its dry runs: pods placed since may have taken the free room.
  if (!room_still_there(group, found, policy)) return false;
  GroupPlan plan;
  plan.planned = true;
  plan.level_label = found.level_label;
  if (plan.level_label.empty()) plan.spread_label = "the cluster";
  plan.domains = {found.domain.empty() ? std::string("the whole cluster") : found.domain};
  plan.slots = found.slots;
  group.plan = std::move(plan);
  for (const std::string& node : found.slots) {
    count_held(group, node, true);  // over the victims still there: no other pod takes the room
    group.slots.push_back(Slot{node, ""});
  }
  group.wants_room = false;
  group.waiting.clear();
  group.preemption_note.clear();
  group.last_progress = Clock::now();
  if (!found.victims.empty() || !found.leaving.empty()) {
    group.preempting =
        Group::Preempting{group.plan.domains.front(), found.victims, found.leaving, group.last_progress};
    if (!found.victims.empty()) ++stats_.preemptions;
  }
  return true;
}

void GroupBook::victim_evicted() { ++stats_.preemption_victims; }

void GroupBook::preemption_failed(const std::string& key, const std::string& why) {
  auto it = groups_.find(key);
  if (it == groups_.end()) return;
  Group& group = *it->second;
  group.preemption_note = why;
  if (!group.preempting) return;
  group.preempting.reset();
  release_open(group);
  group.wants_room = true;
  ++stats_.preemptions_failed;
  spdlog::warn("group {}: the room made for it is given back: {}", group.spec.key, why);
}

std::optional<GroupBook::Admission> GroupBook::while_preempting(Group& group, const Policy& policy) {
  if (!group.preempting) return std::nullopt;
  Group::Preempting& p = *group.preempting;
  std::vector<const PreemptionVictim*> left;
  for (const auto* list : {&p.victims, &p.leaving})
    for (const PreemptionVictim& v : *list)
      if (view_->has_pod(v.uid)) left.push_back(&v);
  const auto now = Clock::now();
  if (left.empty()) {
    spdlog::info("group {}: its {} victim(s) in {} are gone; the room held there is planned", group.spec.key,
                 p.victims.size(), p.domain);
    group.room_made_in = p.domain;
    group.room_ready_at = now;
    group.preempting.reset();
    group.last_progress = now;
    return std::nullopt;
  }
  if (now - p.since > preemption_wait_) {
    preemption_failed(group.spec.key, std::to_string(left.size()) + " victim(s) still there " +
                                          std::to_string(preemption_wait_.count() / 1000) + " s after their eviction");
    Admission a;
    a.reason = describe_group(group.spec, group.member, group.spec.size, policy.schema()) +
               ": the pods evicted for it did not leave in time; the extender looks for room again";
    return a;
  }
  std::string names;
  for (size_t i = 0; i < left.size() && i < kVictimsNamed; ++i)
    names += (names.empty() ? "" : ", ") + left[i]->ns + "/" + left[i]->name;
  if (left.size() > kVictimsNamed) names += ", ...";
  ++stats_.waiting["preempting"];
  Admission a;
  a.victims_leaving = true;
  a.reason = describe_group(group.spec, group.member, group.spec.size, policy.schema()) + " has room made for it in " +
             p.domain + ": " + std::to_string(left.size()) + " of the " +
             std::to_string(p.victims.size() + p.leaving.size()) +
             " pod(s) of lower priority evicted for it or leaving its nodes still terminating (" + names + ")";
  return a;
}

}  // namespace gpu_extender
