// A group's life up to /bind: see group_book.h for its stages and transitions (from /bind on:
// group_book_binds.cpp; making room by eviction: group_book_preemption.cpp).
#include "gpu_extender/state/group_book.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gpu_extender {

GroupBook::GroupBook(std::shared_ptr<ClusterView> view, Options options)
    : view_(std::move(view)),
      ttl_(options.ttl),
      gate_(options.gate),
      preemption_(options.preemption),
      preemption_wait_(options.preemption_wait) {}

const char* GroupBook::stage_name(Stage stage) {
  switch (stage) {
    case Stage::kWaiting: return "waiting";
    case Stage::kPreempting: return "preempting";
    case Stage::kPlanned: return "planned";
    case Stage::kGathering: return "gathering";
    case Stage::kBinding: return "binding";
  }
  return "?";
}

void GroupBook::on_placed(std::function<void(double)> observer) {
  on_placed_ = std::move(observer);
}

size_t GroupBook::count(const Group& group, Member::Step step) {
  return static_cast<size_t>(
      std::count_if(group.members.begin(), group.members.end(), [&](const auto& m) { return m.second.step == step; }));
}

GroupBook::Stage GroupBook::stage_of(const Group& group) {
  if (count(group, Member::Step::kBinding) > 0) return Stage::kBinding;
  if (count(group, Member::Step::kAtGate) > 0) return Stage::kGathering;
  if (group.preempting) return Stage::kPreempting;
  const bool open = std::any_of(group.slots.begin(), group.slots.end(), [](const Slot& s) { return s.member.empty(); });
  return open ? Stage::kPlanned : Stage::kWaiting;
}

GroupBook::Slot* GroupBook::take_slot(Group& group, const std::string& uid, const std::string& node) {
  auto open_on = [&](bool same_node) {
    for (size_t i = group.slots.size(); i-- > 0;)
      if (group.slots[i].member.empty() && (!same_node || group.slots[i].node == node)) return &group.slots[i];
    return static_cast<Slot*>(nullptr);
  };
  Slot* slot = open_on(true);
  if (!slot) slot = open_on(false);  // placed off the plan: the last slot planned is not needed any more
  if (!slot) return nullptr;
  count_held(group, slot->node, false);
  slot->member = uid;
  return slot;
}

void GroupBook::count_held(const Group& group, const std::string& node, bool add) {
  view_->count_in_flight(ClusterView::Write{}, node, group.member.requests, add);
}

void GroupBook::hold_again(Group& group, const std::string& uid) {
  for (Slot& slot : group.slots)
    if (slot.member == uid) {
      count_held(group, slot.node, true);
      slot.member.clear();
    }
}

void GroupBook::release_open(Group& group) {
  for (const Slot& slot : group.slots)
    if (slot.member.empty()) count_held(group, slot.node, false);
  group.slots.erase(std::remove_if(group.slots.begin(), group.slots.end(), [](const Slot& s) { return s.member.empty(); }),
                    group.slots.end());
}

void GroupBook::forget(std::unordered_map<std::string, GroupPtr>::iterator it) {
  release_open(*it->second);
  it->second->gone = true;
  groups_.erase(it);
  gate_changed_.notify_all();
}

void GroupBook::reconcile(Group& group) {
  const auto watched = view_->group_members(group.spec.key);
  for (const auto& [uid, node] : watched) {
    auto [it, added] = group.members.try_emplace(uid, Member{node, Member::Step::kBound, true});
    if (added) take_slot(group, uid, node);
    else if (it->second.step == Member::Step::kBound) it->second.seen_in_watch = true;
  }
  // Bound members the watch showed and no longer shows (terminating, finished, deleted) leave; their
  // place is for a replacement.
  for (auto it = group.members.begin(); it != group.members.end();) {
    const bool shown = std::any_of(watched.begin(), watched.end(), [&](const auto& w) { return w.first == it->first; });
    if (it->second.seen_in_watch && !shown) {
      const std::string& uid = it->first;  // its slot goes too: its node holds nothing for the group now
      group.slots.erase(std::remove_if(group.slots.begin(), group.slots.end(), [&](const Slot& s) { return s.member == uid; }),
                        group.slots.end());
      it = group.members.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<GroupBook::Admission> GroupBook::room_not_seen_yet(Group& group) {
  if (group.room_made_in.empty()) return std::nullopt;
  if (Clock::now() - group.room_ready_at < kRoomUnusedAfter) {
    // Made by eviction a moment ago: the scheduler's cache may not show the victims gone yet.
    Admission a;
    a.reason = "group " + group.spec.key + ": room was made for it in " + group.room_made_in +
               "; waiting for the scheduler to see the pods evicted there gone";
    return a;
  }
  // The scheduler still does not send the room made: its own filters refuse those nodes. Never again there.
  spdlog::warn("group {}: the room made for it in {} was not sent by the scheduler within {} s; that domain is "
               "not preempted in again for the group",
               group.spec.key, group.room_made_in, kRoomUnusedAfter.count());
  group.avoid.push_back(group.room_made_in);
  group.room_made_in.clear();
  return std::nullopt;
}

GroupBook::Admission GroupBook::planned_admission(const Group& group) const {
  Admission a;
  a.kind = Admission::Kind::kPlanned;
  for (const Slot& slot : group.slots)
    if (slot.member.empty()) a.open.push_back(slot.node);
  std::sort(a.open.begin(), a.open.end());
  a.open.erase(std::unique(a.open.begin(), a.open.end()), a.open.end());
  const GroupPlan& p = group.plan;
  std::string domains;
  for (const std::string& d : p.domains) domains += (domains.empty() ? "" : ", ") + d;
  std::string nodes;
  for (const std::string& n : a.open) nodes += (nodes.empty() ? "" : ", ") + n;
  a.plan = "group " + group.spec.key + " is planned in " +
           (p.level_label.empty() ? p.spread_label + " domains " : p.level_label + " domain ") + domains +
           "; its members still to place go to " + nodes;
  return a;
}

// The metrics' word for why a group waits: no domain of the required level has room, or no room at all.
const char* GroupBook::waiting_kind(const GroupPlan& plan) { return plan.level_label.empty() ? "no_room" : "no_domain"; }

bool GroupBook::plan(Group& group, const Policy& policy, const Candidates& candidates) {
  const auto started = Clock::now();
  // Where the members that passed are, so that the rest join them (required: only there).
  std::vector<std::string_view> passed_names;
  for (const auto& [uid, m] : group.members) passed_names.push_back(m.node);
  std::vector<std::shared_ptr<const CachedNode>> passed_nodes;
  view_->find_nodes(passed_names, passed_nodes);
  GroupPlanRequest request;
  request.policy = &policy;
  request.spec = &group.spec;
  request.member = &group.member;
  request.nodes = candidates();
  request.needed = group.spec.size - static_cast<int64_t>(group.members.size());
  for (const auto& node : passed_nodes)
    if (node) request.bound_nodes.push_back(&node->view());
  group.plan = plan_group(request);
  stats_.last_planning_seconds = seconds_between(started, Clock::now());
  if (!group.plan.planned) {
    group.waiting = group.plan.reason;
    return false;
  }
  group.waiting.clear();
  group.wants_room = false;
  for (const std::string& node : group.plan.slots) {
    count_held(group, node, true);
    group.slots.push_back(Slot{node, ""});
  }
  ++stats_.planned;
  spdlog::info("group {}: planned {} member(s) in {} {} ({:.2f} ms)", group.spec.key, group.plan.slots.size(),
               group.plan.level_label.empty() ? group.plan.spread_label : group.plan.level_label,
               group.plan.domains.empty() ? std::string() : group.plan.domains.front(),
               stats_.last_planning_seconds * 1e3);
  return true;
}

GroupBook::Admission GroupBook::admit(const PodRequest& pod, const GroupSpec& spec,
                                      const Policy& policy, const Candidates& candidates, const AnySent& any_sent) {
  Admission a;
  if (!spec.invalid_reason.empty()) {
    ++stats_.waiting["invalid"];
    a.fit = Fit::kUnresolvable;
    a.reason = spec.invalid_reason;
    return a;
  }
  const auto now = Clock::now();
  auto [it, added] = groups_.try_emplace(spec.key);
  if (added) {
    it->second = std::make_shared<Group>();
    it->second->spec = spec;
    it->second->member = pod.facts();
    it->second->first_seen = it->second->last_progress = now;
  }
  Group& group = *it->second;
  if (!added && (!(group.member == pod.facts()) || group.spec.size != spec.size)) {
    ++stats_.waiting["invalid"];
    a.fit = Fit::kUnresolvable;
    a.reason = "pod " + std::string(pod.ns) + "/" + std::string(pod.name) + " asks other resources or another size than " +
               describe_group(group.spec, group.member, group.spec.size, policy.schema()) +
               " (its first member): the members of a group are alike";
    return a;
  }
  reconcile(group);
  if (auto self = group.members.find(std::string(pod.uid)); self != group.members.end()) {
    a.kind = Admission::Kind::kPlanned;  // filtered again while its bind is on its way: where it went
    a.open = {self->second.node};
    a.plan = "group " + group.spec.key + ": this member has passed on " + self->second.node;
    return a;
  }
  if (static_cast<int64_t>(group.members.size()) >= group.spec.size) {
    ++stats_.waiting["full"];
    a.reason = describe_group(group.spec, group.member, group.spec.size, policy.schema()) + " has all " +
               std::to_string(group.spec.size) +
               " members placed or being bound; this pod waits until one of them is terminating or gone";
    return a;
  }
  group.priority = pod.priority;
  group.may_preempt = !pod.never_preempts;
  if (std::optional<Admission> refused = while_preempting(group, policy)) return *refused;
  const bool open = std::any_of(group.slots.begin(), group.slots.end(), [](const Slot& s) { return s.member.empty(); });
  if (open) {
    Admission planned = planned_admission(group);
    if (any_sent(planned.open)) return planned;
    if (std::optional<Admission> held = room_not_seen_yet(group)) return *held;
    // The scheduler refused every open slot's node for this member (or left it out of its sample):
    // the plan no longer holds. The members still to place are planned again over what it sent.
    ++stats_.moved;
    spdlog::info("group {}: no planned node with room left ({}{}) was sent for {}/{}; planning its {} member(s) still "
                 "to place again",
                 group.spec.key, planned.open.front(), planned.open.size() > 1 ? ", ..." : "", pod.ns, pod.name,
                 group.spec.size - static_cast<int64_t>(group.members.size()));
    release_open(group);
    if (plan(group, policy, candidates)) return planned_admission(group);
    // No room beside the members that passed. While none of them is bound, the whole group can still
    // move: the members at the gate are sent back (their binds refused, their retries planned anew)
    // rather than the group waiting for good where it cannot complete.
    if (count(group, Member::Step::kAtGate) > 0 && count(group, Member::Step::kBinding) == 0) {
      send_back_from_gate(group);
      if (plan(group, policy, candidates)) return planned_admission(group);
    }
    ++stats_.waiting[waiting_kind(group.plan)];
    want_room(group, pod);
    a.reason = group.waiting;
    return a;
  }
  if (!plan(group, policy, candidates)) {
    ++stats_.waiting[waiting_kind(group.plan)];
    want_room(group, pod);
    a.reason = group.waiting;
    return a;  // refused, resolvable: capacity may come
  }
  return planned_admission(group);
}

size_t GroupBook::expire(Clock::time_point now) {
  size_t expired = 0;
  for (auto it = groups_.begin(); it != groups_.end();) {
    Group& group = *it->second;
    const auto allowed = group.preempting ? std::max(ttl_, preemption_wait_) : ttl_;  // victims may take long
    if (now - group.last_progress <= allowed || stage_of(group) == Stage::kBinding) {
      ++it;
      continue;
    }
    const bool held = std::any_of(group.slots.begin(), group.slots.end(), [](const Slot& s) { return s.member.empty(); });
    if (held) {
      ++expired;
      spdlog::info("group {}: no member passed for {:.0f} s; the room held for {} member(s) is given back",
                   group.spec.key, seconds_between(group.last_progress, now),
                   group.spec.size - static_cast<int64_t>(group.members.size()));
    }
    auto next = std::next(it);
    forget(it);
    it = next;
  }
  stats_.expired += expired;
  return expired;
}

std::optional<GroupBook::Report> GroupBook::report(const std::string& key) const {
  auto it = groups_.find(key);
  if (it == groups_.end()) return std::nullopt;
  const Group& group = *it->second;
  Report r;
  r.spec = group.spec;
  r.plan = group.plan;
  r.stage = stage_of(group);
  r.bound = count(group, Member::Step::kBound);
  r.passed = group.members.size();
  r.seconds_since_first = seconds_between(group.first_seen, Clock::now());
  r.waiting = group.waiting;
  r.preemption_note = group.preemption_note;
  if (group.preempting) {
    r.preempt_domain = group.preempting->domain;
    for (const PreemptionVictim& v : group.preempting->victims) {
      r.victims.push_back(v.ns + "/" + v.name);
      if (view_->has_pod(v.uid)) ++r.victims_left;
    }
  }
  for (const Slot& slot : group.slots) r.slots.push_back({slot.node, slot.member});
  return r;
}

GroupBook::Stats GroupBook::stats() const {
  Stats s = stats_;
  s.groups = groups_.size();
  s.reserved_gpus_milli = 0;
  for (const auto& [key, group] : groups_)
    for (const Slot& slot : group->slots)
      if (slot.member.empty()) s.reserved_gpus_milli += group->member.gpus_milli();
  return s;
}

}  // namespace gpu_extender
