// A group's members from /bind on (group_book.h): the slot a member's bind takes, the gate it waits at
// until every member has passed, and the commit or roll-back that ends it. The planning and admission
// side is in group_book.cpp.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "gpu_extender/state/group_book.h"

namespace gpu_extender {

void GroupBook::send_back_from_gate(Group& group) {
  for (auto it = group.members.begin(); it != group.members.end();) {
    if (it->second.step != Member::Step::kAtGate) {
      ++it;
      continue;
    }
    const std::string& uid = it->first;
    group.slots.erase(std::remove_if(group.slots.begin(), group.slots.end(), [&](const Slot& s) { return s.member == uid; }),
                      group.slots.end());
    group.sent_back.insert(uid);
    it = group.members.erase(it);
  }
  spdlog::info("group {}: no room beside the members at the gate; they are sent back and the group planned anew",
               group.spec.key);
  gate_changed_.notify_all();
}

void GroupBook::reserve(const PendingPod& pod, const std::string& node) {
  if (pod.group.empty()) return;
  auto it = groups_.find(pod.group);
  if (it == groups_.end()) return;  // placed already, or expired: the pod binds as any pod
  Group& group = *it->second;
  auto [member, added] = group.members.try_emplace(pod.uid, Member{node, Member::Step::kAtGate, false});
  if (!added) return;  // a retried /bind of a member that has passed
  take_slot(group, pod.uid, node);
  group.last_progress = Clock::now();
  group.room_made_in.clear();  // a member passed: the room made is used
  if (gate_.count() == 0) {  // --group-gate-ms 0: each member binds as it comes
    member->second.step = Member::Step::kBinding;
    return;
  }
  if (static_cast<int64_t>(group.members.size()) < group.spec.size) return;
  for (auto& [uid, m] : group.members)
    if (m.step == Member::Step::kAtGate) m.step = Member::Step::kBinding;
  spdlog::info("group {}: all {} member(s) have passed the scheduler's filters; binding them", group.spec.key,
               group.spec.size);
  gate_changed_.notify_all();
}

GroupBook::Gate GroupBook::wait_at_gate(const PendingPod& pod, std::unique_lock<std::mutex>& lock) {
  if (pod.group.empty()) return {};
  auto it = groups_.find(pod.group);
  if (it == groups_.end()) return {};  // placed already, or expired before it passed: binds as any pod
  const GroupPtr group = it->second;   // kept while this member waits, even if the book forgets it
  auto at_gate = [&] {
    auto m = group->members.find(pod.uid);
    return !group->gone && m != group->members.end() && m->second.step == Member::Step::kAtGate;
  };
  const bool member = group->members.count(pod.uid) > 0 || group->sent_back.count(pod.uid) > 0;
  if (!member) return {};  // reserve() found no group to join (it was made just after): binds as any pod
  gate_changed_.wait_until(lock, Clock::now() + gate_, [&] { return !at_gate(); });
  Gate gate;
  gate.ok = false;
  if (group->sent_back.erase(pod.uid) > 0) {
    gate.reason = "group " + group->spec.key + " was planned anew elsewhere while this member waited at its gate (the "
                  "scheduler refused the nodes the rest needed beside it); the scheduler tries the pod again";
    return gate;
  }
  auto m = group->members.find(pod.uid);
  if (!group->gone && m != group->members.end() && m->second.step != Member::Step::kAtGate) return {};  // opened
  // The gate time passed (or the group expired): nothing of the group is bound, this member gives its place up.
  const size_t passed = group->members.size();
  if (m != group->members.end()) {  // its slot is open again: held while the group lives, else released
    hold_again(*group, pod.uid);
    group->members.erase(m);
    if (group->gone) release_open(*group);
  }
  ++stats_.gate_timeouts;
  gate.reason = "group " + group->spec.key + ": " + std::to_string(passed) + " of " + std::to_string(group->spec.size) +
                " members passed the scheduler's filters on their planned nodes within " +
                std::to_string(gate_.count()) +
                " ms of this one; none of them is bound until all have (all or nothing), so this bind is refused and "
                "the scheduler tries the pod again";
  if (group->gone) gate.reason = "group " + group->spec.key + " gave its room back (no progress within the TTL) "
                                 "while this member waited for the rest; the scheduler tries the pod again";
  return gate;
}

// The group `pod` is a member of, with its entry, while the book places it; {nullptr, nullptr} otherwise.
std::pair<GroupBook::Group*, GroupBook::Member*> GroupBook::member_of(const PendingPod& pod) {
  auto it = groups_.find(pod.group);
  if (it == groups_.end()) return {nullptr, nullptr};
  auto m = it->second->members.find(pod.uid);
  if (m == it->second->members.end()) return {it->second.get(), nullptr};
  return {it->second.get(), &m->second};
}

void GroupBook::commit(const PendingPod& pod) {
  if (pod.group.empty()) return;
  auto [group, member] = member_of(pod);
  if (!member) return;
  member->step = Member::Step::kBound;
  group->last_progress = Clock::now();
  if (count(*group, Member::Step::kBound) < static_cast<size_t>(group->spec.size)) return;
  ++stats_.placed;
  const double seconds = seconds_between(group->first_seen, group->last_progress);
  spdlog::info("group {}: all {} member(s) bound, {:.1f} s after the first was seen", group->spec.key, group->spec.size,
               seconds);
  if (on_placed_) on_placed_(seconds);
  forget(groups_.find(pod.group));
}

void GroupBook::roll_back(const PendingPod& pod) {
  if (pod.group.empty()) return;
  auto [group, member] = member_of(pod);
  if (!member) return;
  hold_again(*group, pod.uid);
  group->members.erase(pod.uid);
}

}  // namespace gpu_extender
