#include "gpu_extender/group_book.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gpu_extender {

GroupBook::GroupBook(std::shared_ptr<ClusterView> view, std::chrono::milliseconds ttl)
    : view_(std::move(view)), ttl_(ttl) {}

void GroupBook::on_placed(std::function<void(double)> observer) {
  std::lock_guard lock(mutex_);
  on_placed_ = std::move(observer);
}

namespace {
bool complete(const GroupSpec& spec, size_t bound) { return static_cast<int64_t>(bound) >= spec.size; }
double seconds_between(GroupBook::Clock::time_point a, GroupBook::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

void GroupBook::take_slot(Group& group, const std::string& uid, const std::string& node) {
  group.bound[uid] = node;
  auto open_on = [&](bool same_node) {
    for (size_t i = group.slots.size(); i-- > 0;)
      if (group.slots[i].member.empty() && (!same_node || group.slots[i].node == node)) return &group.slots[i];
    return static_cast<Slot*>(nullptr);
  };
  Slot* slot = open_on(true);
  if (!slot) slot = open_on(false);  // bound off the plan: the last slot planned is not needed any more
  if (!slot) return;
  view_->release_hold(slot->hold_key);
  slot->member = uid;
}

void GroupBook::release_all(Group& group) {
  for (Slot& slot : group.slots)
    if (slot.member.empty()) view_->release_hold(slot.hold_key);
  group.slots.clear();
}

void GroupBook::reconcile(Group& group) {
  for (const auto& [uid, node] : view_->group_members(group.spec.key))
    if (!group.bound.count(uid)) take_slot(group, uid, node);
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

bool GroupBook::plan(Group& group, const Policy& policy, const Candidates& candidates, std::string& reason,
                     std::string& reason_kind) {
  const auto started = Clock::now();
  // The bound members' nodes, so that the rest stay in their domain if they fit there.
  std::vector<std::string_view> bound_names;
  for (const auto& [uid, node] : group.bound) bound_names.push_back(node);
  std::vector<std::shared_ptr<const CachedNode>> bound_nodes;
  view_->find_nodes(bound_names, bound_nodes);
  GroupPlanRequest request;
  request.policy = &policy;
  request.spec = &group.spec;
  request.member = &group.member;
  request.nodes = candidates();
  request.needed = group.spec.size - static_cast<int64_t>(group.bound.size());
  for (const auto& node : bound_nodes)
    if (node) request.bound_nodes.push_back(&node->view());
  group.plan = plan_group(request);
  stats_.last_planning_seconds = seconds_between(started, Clock::now());
  if (!group.plan.planned) {
    reason = group.plan.reason;
    reason_kind = group.plan.level_label.empty() ? "no_room" : "no_domain";
    return false;
  }
  group.slots.clear();
  for (const std::string& node : group.plan.slots) {
    Slot slot{node, group.spec.key + "#" + std::to_string(next_hold_++), ""};
    view_->hold(slot.hold_key, node, group.member.requests);
    group.slots.push_back(std::move(slot));
  }
  ++stats_.planned;
  spdlog::info("group {}: planned {} member(s) in {} {} ({:.2f} ms)", group.spec.key, group.slots.size(),
               group.plan.level_label.empty() ? group.plan.spread_label : group.plan.level_label,
               group.plan.domains.empty() ? std::string() : group.plan.domains.front(),
               stats_.last_planning_seconds * 1e3);
  return true;
}

GroupBook::Admission GroupBook::admit(const PodRequest& pod, const GroupSpec& spec, const std::string& spec_error,
                                      const Policy& policy, const Candidates& candidates) {
  std::lock_guard lock(mutex_);
  Admission a;
  if (!spec_error.empty()) {
    ++stats_.waiting["invalid"];
    a.fit = Fit::kUnresolvable;
    a.reason = spec_error;
    return a;
  }
  const auto now = Clock::now();
  auto [it, added] = groups_.try_emplace(spec.key);
  Group& group = it->second;
  if (added) {
    group.spec = spec;
    group.member = pod.facts();
    group.first_seen = now;
  } else if (!(group.member == pod.facts()) || group.spec.size != spec.size) {
    ++stats_.waiting["invalid"];
    a.fit = Fit::kUnresolvable;
    a.reason = "pod " + std::string(pod.ns) + "/" + std::string(pod.name) + " asks other resources or another size than " +
               describe_group(group.spec, group.member, group.spec.size, policy.schema()) +
               " (its first member): the members of a group are alike";
    return a;
  }
  group.last_seen = now;
  reconcile(group);
  if (complete(group.spec, group.bound.size())) {
    release_all(group);
    groups_.erase(it);
    a.kind = Admission::Kind::kBeyondSize;
    return a;
  }
  const bool open = std::any_of(group.slots.begin(), group.slots.end(), [](const Slot& s) { return s.member.empty(); });
  std::string kind;
  if (!open && !plan(group, policy, candidates, a.reason, kind)) {
    ++stats_.waiting[kind];
    return a;  // refused, resolvable: capacity may come
  }
  return planned_admission(group);
}

void GroupBook::bound(const PendingPod& pod, const std::string& node) {
  if (pod.group.empty()) return;
  std::lock_guard lock(mutex_);
  auto it = groups_.find(pod.group);
  if (it == groups_.end()) return;  // placed already, or expired: the pod counts as any bound pod
  Group& group = it->second;
  if (group.bound.count(pod.uid)) return;
  take_slot(group, pod.uid, node);
  group.last_seen = Clock::now();
  if (!complete(group.spec, group.bound.size())) return;
  ++stats_.placed;
  const double seconds = seconds_between(group.first_seen, group.last_seen);
  spdlog::info("group {}: all {} member(s) bound, {:.1f} s after the first was seen", group.spec.key, group.spec.size, seconds);
  if (on_placed_) on_placed_(seconds);
  release_all(group);
  groups_.erase(it);
}

void GroupBook::unbound(const PendingPod& pod) {
  if (pod.group.empty()) return;
  std::lock_guard lock(mutex_);
  auto it = groups_.find(pod.group);
  if (it == groups_.end()) return;  // placed (this was its last member) or expired: planned anew when it comes back
  Group& group = it->second;
  group.bound.erase(pod.uid);
  for (Slot& slot : group.slots)
    if (slot.member == pod.uid) {
      view_->hold(slot.hold_key, slot.node, group.member.requests);
      slot.member.clear();
    }
}

size_t GroupBook::expire(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  size_t expired = 0;
  for (auto it = groups_.begin(); it != groups_.end();) {
    Group& group = it->second;
    if (now - group.last_seen <= ttl_) {
      ++it;
      continue;
    }
    const bool held = std::any_of(group.slots.begin(), group.slots.end(), [](const Slot& s) { return s.member.empty(); });
    if (held) {
      ++expired;
      spdlog::info("group {}: no member seen for {:.0f} s; the room held for {} member(s) is given back", group.spec.key,
                   seconds_between(group.last_seen, now), group.spec.size - static_cast<int64_t>(group.bound.size()));
    }
    release_all(group);
    it = groups_.erase(it);
  }
  stats_.expired += expired;
  return expired;
}

std::optional<GroupBook::Report> GroupBook::report(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = groups_.find(key);
  if (it == groups_.end()) return std::nullopt;
  const Group& group = it->second;
  Report r{group.spec, group.plan, {}, group.bound.size(), seconds_between(group.first_seen, Clock::now())};
  for (const Slot& slot : group.slots) r.slots.push_back({slot.node, slot.member});
  return r;
}

GroupBook::Stats GroupBook::stats() const {
  std::lock_guard lock(mutex_);
  Stats s = stats_;
  s.groups = groups_.size();
  s.reserved_gpus_milli = 0;
  for (const auto& [key, group] : groups_)
    for (const Slot& slot : group.slots)
      if (slot.member.empty()) s.reserved_gpus_milli += group.member.gpus_milli();
  return s;
}

}  // namespace gpu_extender
