// Group preemption: see group_preemption.h for the algorithm and its sources.
#include "gpu_extender/policy/group_preemption.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

namespace gpu_extender {
namespace {

constexpr size_t kMaxConsidered = 16;  // domains shown in explanations

// A node of the request with what may leave it.
struct NodeRoom {
  const NodeInput* input = nullptr;
  ResourceAmounts used;                           // less what terminating pods free
  std::vector<const PreemptionVictim*> eligible;  // most important first (the reprieve order)
  int64_t free_room = 0;                          // members that fit with nothing evicted
  int64_t max_room = 0;                           // ... with every eligible victim gone
};

// Most important first: kept first when victims are given back.
bool more_important(const PreemptionVictim* a, const PreemptionVictim* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  if (a->deletion_cost != b->deletion_cost) return a->deletion_cost > b->deletion_cost;
  return a->ns != b->ns ? a->ns < b->ns : a->name < b->name;
}

int64_t room_with(const GroupPreemptionRequest& r, const NodeRoom& n, const ResourceAmounts& used, int64_t cap) {
  NodeInput probe = *n.input;
  probe.used = &used;
  return members_room(*r.policy, *r.member, probe, cap);
}

// The victims `n` needs gone to hold `room` members: every eligible one gone, then each given back,
// most important first, while the room holds.
std::vector<const PreemptionVictim*> victims_for(const GroupPreemptionRequest& r, const NodeRoom& n, int64_t room) {
  ResourceAmounts used = n.used;
  for (const PreemptionVictim* v : n.eligible) used.subtract(v->requests);
  std::vector<const PreemptionVictim*> victims;
  for (const PreemptionVictim* v : n.eligible) {
    ResourceAmounts kept = used;
    kept.add(v->requests);
    if (room_with(r, n, kept, room) >= room) used = kept;  // reprieved
    else victims.push_back(v);
  }
  return victims;
}

VictimRank rank_of(const std::vector<const PreemptionVictim*>& victims) {
  VictimRank rank;
  for (const PreemptionVictim* v : victims) rank.add(*v);
  return rank;
}

// The plan for one domain: its nodes (indexes into `nodes`), or nullopt when the whole group cannot fit
// there even with every eligible victim gone.
std::optional<GroupPreemptionPlan> plan_domain(const GroupPreemptionRequest& r, const std::vector<NodeRoom>& nodes,
                                               const std::vector<size_t>& in_domain) {
  int64_t free = 0, most = 0;
  for (size_t i : in_domain) {
    free += nodes[i].free_room;
    most += nodes[i].max_room;
  }
  if (most < r.needed) return std::nullopt;
  // Nodes that can take more with victims gone, by how their victims for one more member rank.
  struct Option {
    size_t node;
    VictimRank first;
  };
  std::vector<Option> options;
  for (size_t i : in_domain)
    if (nodes[i].max_room > nodes[i].free_room)
      options.push_back({i, rank_of(victims_for(r, nodes[i], nodes[i].free_room + 1))});
  std::stable_sort(options.begin(), options.end(), [&](const Option& a, const Option& b) {
    if (a.first < b.first || b.first < a.first) return a.first < b.first;
    return nodes[a.node].input->node->name < nodes[b.node].input->node->name;
  });
  std::map<size_t, int64_t> room;  // node -> members it takes
  int64_t placed = 0;
  // Free room first, fullest nodes first (as plan_group places members): no victim for those.
  std::vector<size_t> by_fullness(in_domain);
  std::sort(by_fullness.begin(), by_fullness.end(), [&](size_t a, size_t b) {
    if (nodes[a].free_room != nodes[b].free_room) return nodes[a].free_room < nodes[b].free_room;
    return nodes[a].input->node->name < nodes[b].input->node->name;
  });
  for (size_t i : by_fullness) {
    const int64_t take = std::min(nodes[i].free_room, r.needed - placed);
    if (take > 0) room[i] = take;
    placed += std::max<int64_t>(take, 0);
  }
  GroupPreemptionPlan plan;
  for (const Option& o : options) {
    if (placed >= r.needed) break;
    const NodeRoom& n = nodes[o.node];
    const int64_t extra = std::min(n.max_room - n.free_room, r.needed - placed);
    room[o.node] = n.free_room + extra;
    placed += extra;
    for (const PreemptionVictim* v : victims_for(r, n, n.free_room + extra)) {
      plan.victims.push_back(*v);
      plan.rank.add(*v);
    }
  }
  for (const auto& [i, count] : room)
    for (int64_t k = 0; k < count; ++k) plan.slots.emplace_back(nodes[i].input->node->name);
  plan.chosen = true;
  return plan;
}

// Groups the nodes by their domain at `level` (nullopt: the whole cluster, one domain "").
std::map<std::string, std::vector<size_t>> domains_at(const std::vector<NodeRoom>& nodes, std::optional<size_t> level) {
  std::map<std::string, std::vector<size_t>> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string d = level ? domain_of(*nodes[i].input->node, *level) : std::string();
    if (level && d.empty()) continue;
    out[d].push_back(i);
  }
  return out;
}

// The best domain of one level, with the level's domains ranked in `considered`.
GroupPreemptionPlan plan_level(const GroupPreemptionRequest& r, const std::vector<NodeRoom>& nodes,
                               std::optional<size_t> level, const std::string& stay) {
  GroupPreemptionPlan best;
  std::vector<DomainPreemption> considered;
  for (const auto& [domain, members] : domains_at(nodes, level)) {
    if (std::find(r.avoid.begin(), r.avoid.end(), domain) != r.avoid.end()) continue;
    if (!stay.empty() && domain != stay) continue;
    std::optional<GroupPreemptionPlan> plan = plan_domain(r, nodes, members);
    considered.push_back({domain, plan.has_value(), plan ? plan->rank : VictimRank{}});
    if (!plan || (best.chosen && !(plan->rank < best.rank))) continue;  // ties: the first name
    best = std::move(*plan);
    best.domain = domain;
  }
  std::stable_sort(considered.begin(), considered.end(), [](const DomainPreemption& a, const DomainPreemption& b) {
    if (a.feasible != b.feasible) return a.feasible;
    return a.rank < b.rank;
  });
  if (considered.size() > kMaxConsidered) considered.resize(kMaxConsidered);
  best.considered = std::move(considered);
  best.level_label = level ? r.policy->schema().node_topology_labels[*level] : std::string();
  return best;
}

bool carried(const std::vector<NodeRoom>& nodes, size_t level) {
  return std::any_of(nodes.begin(), nodes.end(), [&](const NodeRoom& n) { return n.input->node->topology[level].has_value(); });
}

}  // namespace

std::shared_ptr<const PreemptionVictim> preemption_victim_of(const PodRequest& pod, const ResourceAmounts& holds) {
  PodFacts held;
  held.requests = holds;
  if (!held.wants_gpus() && !held.wants_shared_gpu()) return nullptr;
  auto v = std::make_shared<PreemptionVictim>();
  v->uid = pod.uid;
  v->ns = pod.ns;
  v->name = pod.name;
  v->node = pod.node_name;
  v->requests = holds;
  v->priority = pod.priority;
  if (pod.deletion_cost) {  // an int32 as the ReplicaSet controller reads it; anything else counts as 0
    int32_t cost = 0;
    const std::string_view text = *pod.deletion_cost;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), cost);
    if (ec == std::errc() && end == text.data() + text.size()) v->deletion_cost = cost;
  }
  v->group = PendingPod::group_key_of(pod);
  v->native_gang = pod.native_pod_group;
  v->terminating = pod.terminating;
  return v;
}

void VictimRank::add(const PreemptionVictim& v) {
  highest_priority = std::max(highest_priority, v.priority);
  priority_sum += int64_t{v.priority} + (int64_t{1} << 31);
  ++count;
  deletion_cost_sum += v.deletion_cost;
}

bool VictimRank::operator<(const VictimRank& o) const {
  if (highest_priority != o.highest_priority) return highest_priority < o.highest_priority;
  if (priority_sum != o.priority_sum) return priority_sum < o.priority_sum;
  if (count != o.count) return count < o.count;
  return deletion_cost_sum < o.deletion_cost_sum;
}

GroupPreemptionPlan plan_group_preemption(const GroupPreemptionRequest& r) {
  const ViewSchema& schema = r.policy->schema();
  const std::string group = describe_group(*r.spec, *r.member, r.needed, schema);
  // Each node with what may leave it.
  std::map<std::string_view, std::vector<const PreemptionVictim*>> pods_on;
  for (const PreemptionVictim& p : r.pods) pods_on[p.node].push_back(&p);
  std::vector<NodeRoom> nodes;
  size_t eligible = 0;
  for (const NodeInput& in : r.nodes) {
    NodeRoom n;
    n.input = &in;
    n.used = in.used ? *in.used : ResourceAmounts{};
    for (const PreemptionVictim* p : pods_on[in.node->name]) {
      if (p->terminating) n.used.subtract(p->requests);  // leaving anyway: its room comes without an eviction
      else if (p->priority < r.priority && p->group.empty() && !p->native_gang && !p->budget_refused)
        n.eligible.push_back(p);
    }
    std::sort(n.eligible.begin(), n.eligible.end(), more_important);
    eligible += n.eligible.size();
    n.free_room = room_with(r, n, n.used, r.needed);
    ResourceAmounts emptied = n.used;
    for (const PreemptionVictim* v : n.eligible) emptied.subtract(v->requests);
    n.max_room = n.eligible.empty() ? n.free_room : room_with(r, n, emptied, r.needed);
    nodes.push_back(std::move(n));
  }

  const size_t levels = std::min(schema.node_topology_labels.size(), kMaxTopologyLevels);
  std::optional<size_t> level;
  if (r.spec->constraint.kind != GroupConstraint::Kind::kDefault) level = r.spec->constraint.level;
  else
    for (size_t l = levels; l-- > 0;)
      if (schema.node_topology_labels[l] != "kubernetes.io/hostname" && carried(nodes, l)) {
        level = l;
        break;
      }
  // The levels to try, finest first: required, only its own; otherwise each level above, then the cluster.
  std::vector<std::optional<size_t>> tries;
  if (level) tries.push_back(level);
  if (r.spec->constraint.kind != GroupConstraint::Kind::kRequired) {
    if (level)
      for (size_t l = *level; l-- > 0;)
        if (carried(nodes, l)) tries.push_back(l);
    tries.push_back(std::nullopt);
  }
  // Members bound already: a required group's rest goes to their one domain or nowhere.
  std::string stay;
  if (r.spec->constraint.kind == GroupConstraint::Kind::kRequired && level)
    for (const std::string& bound : r.bound_nodes)
      for (const NodeRoom& n : nodes)
        if (n.input->node->name == bound) stay = domain_of(*n.input->node, *level);
  GroupPreemptionPlan plan;
  for (const std::optional<size_t>& at : tries) {
    plan = plan_level(r, nodes, at, stay);
    if (!plan.chosen) continue;
    for (const PreemptionVictim& p : r.pods)  // what the group waits for besides its victims
      if (p.terminating && std::find(plan.slots.begin(), plan.slots.end(), p.node) != plan.slots.end())
        plan.leaving.push_back(p);
    return plan;
  }
  const std::string where = level && r.spec->constraint.kind == GroupConstraint::Kind::kRequired
                                ? "in any one " + schema.node_topology_labels[*level] + " domain"
                                : "anywhere";
  plan.reason = group + " (priority " + std::to_string(r.priority) + ") would not fit " + where +
                " even with every pod it may preempt gone (" + std::to_string(eligible) +
                " bound pod(s) of lower priority outside groups and not protected by a PodDisruptionBudget)";
  return plan;
}

}  // namespace gpu_extender
