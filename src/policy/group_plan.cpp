// Planning a group whole: see group_plan.h for the algorithm and its sources.
#include "gpu_extender/policy/group_plan.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "gpu_extender/common/quantity.h"

namespace gpu_extender {
namespace {

constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
constexpr int64_t kMaxGroupSize = 10000;  // more pods than any training job has: a typo
constexpr size_t kMaxConsidered = 16;     // domains shown in explanations

std::optional<size_t> level_named(const ViewSchema& schema, std::string_view label) {
  const auto& levels = schema.node_topology_labels;
  for (size_t l = 0; l < levels.size() && l < kMaxTopologyLevels; ++l)
    if (levels[l] == label) return l;
  return std::nullopt;
}

int64_t free_gpus(const NodeInput& in) {
  const int64_t offered = in.node->offered(ViewSchema::kGpuResource).value_or(0);
  const int64_t used = in.used ? in.used->get(ViewSchema::kGpuResource) : 0;
  return std::max<int64_t>(offered - used, 0) / 1000;
}

int64_t used_gpus(const NodeInput& in) { return in.used ? in.used->get(ViewSchema::kGpuResource) / 1000 : 0; }

// The most members the node's free amounts could take, by arithmetic alone (at least 1, at most `cap`):
// an upper bound on its room, since every resource a member asks must fit.
int64_t room_bound(const PodFacts& member, const NodeInput& in, int64_t cap) {
  int64_t bound = cap;
  for (size_t r = 0; r < kMaxNamedResources; ++r) {
    const int64_t asked = member.requested(r);
    const std::optional<int64_t> offered = in.node->offered(r);
    if (asked <= 0 || !offered) continue;
    const int64_t used = in.used ? in.used->get(r) : 0;
    bound = std::min(bound, std::max<int64_t>((*offered - used) / asked, 1));
  }
  return std::max<int64_t>(bound, 1);
}

// Whether `count` members fit on the node at once: the policy's verdict on the last, with the others
// counted on the node.
bool fits_stacked(const Policy& policy, const PodFacts& member, const NodeInput& in, int64_t count,
                  std::vector<NodeVerdict>& scratch) {
  ResourceAmounts used = in.used ? *in.used : ResourceAmounts{};
  // The other count - 1 members at once: one multiplication per resource the member asks, not an
  // addition per member and tracked resource.
  for (uint32_t asked = member.requests.present; asked != 0; asked &= asked - 1) {
    const auto r = static_cast<size_t>(__builtin_ctz(asked));
    int64_t others = 0;
    if (__builtin_mul_overflow(member.requests.get(r), count - 1, &others)) others = INT64_MAX;
    used.add(r, others);
  }
  NodeInput probe = in;
  probe.used = &used;
  policy.filter(member, {&probe, 1}, scratch);
  return scratch[0].passed();
}

// What the planner knows of each candidate node.
struct Candidate {
  const NodeInput* input;
  int64_t room, free_gpus, used_gpus;
};

// The candidates grouped into the domains of one level (or, for `level` == nullopt, each node a domain).
struct Domains {
  std::vector<DomainRoom> list;
  std::vector<int> of_candidate;  // index into list, -1 where the node does not carry the level
};

Domains domains_at(std::span<const Candidate> candidates, std::optional<size_t> level, bool nodes_alone) {
  Domains out;
  out.of_candidate.assign(candidates.size(), -1);
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    std::string path = level ? domain_of(*c.input->node, *level) : std::string();
    if (path.empty() && nodes_alone) path = std::string(c.input->node->name);
    if (path.empty()) continue;
    auto [it, added] = index.try_emplace(path, static_cast<int>(out.list.size()));
    if (added) out.list.push_back({path, 0, 0, 0});
    DomainRoom& d = out.list[static_cast<size_t>(it->second)];
    d.room += c.room;
    d.free_gpus += c.free_gpus;
    d.used_gpus += c.used_gpus;
    out.of_candidate[i] = it->second;
  }
  return out;
}

// Best fit first among domains that hold `needed`: fewest free GPUs left after the group, then more used,
// then by name; then those that do not, most room first.
void order_best_fit(std::vector<DomainRoom>& list, int64_t needed, int64_t gpus_per_member) {
  std::sort(list.begin(), list.end(), [&](const DomainRoom& a, const DomainRoom& b) {
    const bool fa = a.room >= needed, fb = b.room >= needed;
    if (fa != fb) return fa;
    if (fa) {
      const int64_t left_a = a.free_gpus - needed * gpus_per_member, left_b = b.free_gpus - needed * gpus_per_member;
      if (left_a != left_b) return left_a < left_b;
    } else if (a.room != b.room) {
      return a.room > b.room;
    }
    if (a.used_gpus != b.used_gpus) return a.used_gpus > b.used_gpus;
    return a.domain < b.domain;
  });
}

// The members, placed on the nodes of `chosen` domains: the domains of the preferred level with most room
// first (so the group spans as few of them as it can), and in each the fullest node first, each node up
// to its room.
std::vector<std::string> place_members(std::span<const Candidate> candidates, const Domains& domains,
                                       const std::vector<std::string>& chosen, int64_t needed,
                                       std::optional<size_t> preferred) {
  const Domains fine = domains_at(candidates, preferred, true);
  struct Ranked {
    const Candidate* c;
    int64_t fine_room;
    const std::string* fine_domain;
  };
  std::vector<Ranked> nodes;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (domains.of_candidate[i] < 0 || candidates[i].room == 0) continue;
    const std::string& d = domains.list[static_cast<size_t>(domains.of_candidate[i])].domain;
    if (std::find(chosen.begin(), chosen.end(), d) == chosen.end()) continue;
    const DomainRoom& f = fine.list[static_cast<size_t>(fine.of_candidate[i])];
    nodes.push_back({&candidates[i], f.room, &f.domain});
  }
  std::sort(nodes.begin(), nodes.end(), [](const Ranked& a, const Ranked& b) {
    if (a.fine_room != b.fine_room) return a.fine_room > b.fine_room;
    if (*a.fine_domain != *b.fine_domain) return *a.fine_domain < *b.fine_domain;
    if (a.c->free_gpus != b.c->free_gpus) return a.c->free_gpus < b.c->free_gpus;
    return a.c->input->node->name < b.c->input->node->name;
  });
  std::vector<std::string> slots;
  for (const Ranked& r : nodes)
    for (int64_t k = 0; k < r.c->room && static_cast<int64_t>(slots.size()) < needed; ++k)
      slots.emplace_back(r.c->input->node->name);
  return slots;
}

std::string last_segment(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void keep_considered(GroupPlan& plan, const std::vector<DomainRoom>& list) {
  plan.considered.assign(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(std::min(list.size(), kMaxConsidered)));
}

// Whether some candidate carries `level`.
bool carried(std::span<const Candidate> candidates, size_t level) {
  return std::any_of(candidates.begin(), candidates.end(),
                     [&](const Candidate& c) { return c.input->node->topology[level].has_value(); });
}

// The bound members' one domain at `level`, "" when they have none or several.
std::string bound_domain(const std::vector<const NodeView*>& bound, size_t level) {
  std::string domain;
  for (const NodeView* node : bound) {
    const std::string d = node ? domain_of(*node, level) : std::string();
    if (d.empty() || (!domain.empty() && d != domain)) return {};
    domain = d;
  }
  return domain;
}

// One level: the best domain that holds the group (the bound members' one first), planned. `required`:
// members bound in one domain of the level keep the rest there, or nothing is planned (never split).
bool plan_at_level(const GroupPlanRequest& r, std::span<const Candidate> candidates, size_t level,
                   std::optional<size_t> preferred, int64_t gpus_per_member, bool required, GroupPlan& plan) {
  const Domains domains = domains_at(candidates, level, false);
  std::vector<DomainRoom> ordered = domains.list;  // domains.list stays in the order of_candidate indexes
  order_best_fit(ordered, r.needed, gpus_per_member);
  keep_considered(plan, ordered);
  plan.level_label = r.policy->schema().node_topology_labels[level];
  const std::string stay = bound_domain(r.bound_nodes, level);
  auto stay_at = std::find_if(ordered.begin(), ordered.end(), [&](const DomainRoom& d) { return d.domain == stay; });
  const bool stay_fits = !stay.empty() && stay_at != ordered.end() && stay_at->room >= r.needed;
  if (required && !stay.empty() && !stay_fits) return false;
  if (!stay_fits && (ordered.empty() || ordered.front().room < r.needed)) return false;
  const std::string chosen = stay_fits ? stay : ordered.front().domain;
  plan.domains = {chosen};
  plan.slots = place_members(candidates, domains, plan.domains, r.needed, preferred);
  plan.planned = true;
  return true;
}

// The whole cluster: domains of `level` (each node alone where it lacks the level, or for no level),
// most room first, as few as hold the group.
bool plan_spread(const GroupPlanRequest& r, std::span<const Candidate> candidates, std::optional<size_t> level,
                 int64_t gpus_per_member, GroupPlan& plan) {
  const Domains domains = domains_at(candidates, level, true);
  std::vector<DomainRoom> by_room = domains.list;  // domains.list stays in the order of_candidate indexes
  order_best_fit(by_room, r.needed, gpus_per_member);
  std::stable_sort(by_room.begin(), by_room.end(), [](const DomainRoom& a, const DomainRoom& b) { return a.room > b.room; });
  plan.level_label.clear();
  plan.spread_label = level ? r.policy->schema().node_topology_labels[*level] : std::string(kHostnameLabel);
  int64_t total = 0;
  std::vector<std::string> chosen;
  for (const DomainRoom& d : by_room) {
    if (total >= r.needed || d.room == 0) break;
    chosen.push_back(d.domain);
    total += d.room;
  }
  if (total < r.needed) {
    keep_considered(plan, by_room);
    return false;
  }
  keep_considered(plan, by_room);
  plan.domains = chosen;
  plan.slots = place_members(candidates, domains, chosen, r.needed, level);
  plan.planned = true;
  return true;
}

}  // namespace

// The rules are monotone in usage (more in use never fits better), so the arithmetic bound is tried
// first: where it fits (almost always), that is the room, in one evaluation instead of one per member;
// else members are stacked one by one.
int64_t members_room(const Policy& policy, const PodFacts& member, const NodeInput& in, int64_t cap) {
  thread_local std::vector<NodeVerdict> scratch;
  if (cap <= 0 || !fits_stacked(policy, member, in, 1, scratch)) return 0;
  const int64_t bound = room_bound(member, in, cap);
  if (bound == 1 || fits_stacked(policy, member, in, bound, scratch)) return bound;
  int64_t room = 1;
  while (room + 1 < bound && fits_stacked(policy, member, in, room + 1, scratch)) ++room;
  return room;
}

std::string domain_of(const NodeView& node, size_t level) {
  if (level >= kMaxTopologyLevels || !node.topology[level]) return {};
  std::string path;
  for (size_t l = 0; l <= level; ++l) {
    if (!node.topology[l]) continue;
    if (!path.empty()) path.push_back('/');
    path += *node.topology[l];
  }
  return path;
}

std::string describe_domain_path(const NodeView& node, const ViewSchema& schema) {
  std::string out;
  for (size_t l = 0; l < schema.node_topology_labels.size() && l < kMaxTopologyLevels; ++l) {
    if (!node.topology[l]) continue;
    if (!out.empty()) out += " / ";
    out += std::string(*node.topology[l]) + " (" + schema.node_topology_labels[l] + ")";
  }
  return out;
}

std::optional<GroupSpec> group_spec_of(const PodRequest& pod, const ViewSchema& schema) {
  // A pod of Kubernetes' own pod groups (1.35+) is placed whole by the scheduler's gang scheduling, one
  // pod-group cycle per candidate placement: a plan of ours would be fixed by the first placement it
  // tries and held over the ones it rolls back. Its group annotations are left to that.
  if (!pod.group.member() || pod.native_pod_group) return std::nullopt;
  GroupSpec spec;
  spec.key = std::string(pod.ns) + "/" + std::string(*pod.group.name);
  if (!pod.group.size) {
    spec.invalid_reason = "pod " + std::string(pod.ns) + "/" + std::string(pod.name) + " is in group " + spec.key +
            " but does not say how many pods the group has: annotation " + label_names(schema.pod_group_size_annotations);
    return spec;
  }
  const std::string_view text = *pod.group.size;
  int64_t size = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
  if (ec != std::errc() || end != text.data() + text.size() || size < 1 || size > kMaxGroupSize) {
    spec.invalid_reason = "pod annotation " + std::string(pod.group.size_key) + ": expected a whole number 1.." +
            std::to_string(kMaxGroupSize) + ", not \"" + std::string(text) + "\"";
    return spec;
  }
  spec.size = size;
  auto level_of = [&](const std::optional<std::string_view>& label, std::string_view key,
                      GroupConstraint::Kind kind) -> bool {
    if (!label) return false;
    const std::optional<size_t> level = level_named(schema, *label);
    if (!level) {
      spec.invalid_reason = "pod annotation " + std::string(key) + ": \"" + std::string(*label) +
              "\" is not a topology level of the policy (topology.levels: " + label_names(schema.node_topology_labels) + ")";
      return true;
    }
    spec.constraint = {kind, *level};
    return true;
  };
  if (!level_of(pod.group.required_topology, pod.group.required_key, GroupConstraint::Kind::kRequired))
    level_of(pod.group.preferred_topology, pod.group.preferred_key, GroupConstraint::Kind::kPreferred);
  return spec;
}

std::string describe_group(const GroupSpec& spec, const PodFacts& member, int64_t needed, const ViewSchema& schema) {
  std::string pods = needed == spec.size ? std::to_string(needed) + " pods"
                                         : std::to_string(needed) + " of " + std::to_string(spec.size) + " pods";
  if (member.wants_gpus()) pods += " x " + format_milli(member.gpus_milli()) + " " + schema.resources.name(ViewSchema::kGpuResource);
  return "group " + spec.key + " (" + pods + ")";
}

GroupPlan plan_group(const GroupPlanRequest& r) {
  GroupPlan plan;
  const ViewSchema& schema = r.policy->schema();
  const int64_t gpus_per_member = (r.member->gpus_milli() + 999) / 1000;
  std::vector<Candidate> candidates;
  candidates.reserve(r.nodes.size());
  for (const NodeInput& in : r.nodes)
    candidates.push_back({&in, members_room(*r.policy, *r.member, in, r.needed), free_gpus(in), used_gpus(in)});
  const std::string group = describe_group(*r.spec, *r.member, r.needed, schema);
  const size_t levels = std::min(schema.node_topology_labels.size(), kMaxTopologyLevels);

  std::optional<size_t> level;
  if (r.spec->constraint.kind != GroupConstraint::Kind::kDefault) {
    level = r.spec->constraint.level;
  } else {
    for (size_t l = levels; l-- > 0;)
      if (schema.node_topology_labels[l] != kHostnameLabel && carried(candidates, l)) {
        level = l;
        break;
      }
  }
  if (r.spec->constraint.kind == GroupConstraint::Kind::kRequired) {
    if (plan_at_level(r, candidates, *level, level, gpus_per_member, true, plan)) return plan;
    const std::string& label = schema.node_topology_labels[*level];
    if (const std::string stay = bound_domain(r.bound_nodes, *level); !stay.empty()) {
      auto at = std::find_if(plan.considered.begin(), plan.considered.end(),
                             [&](const DomainRoom& d) { return d.domain == stay; });
      plan.reason = group + " needs one " + label + " domain, and its members placed so far are in " +
                    last_segment(stay) + ", which has room for " +
                    std::to_string(at == plan.considered.end() ? 0 : at->room) +
                    " more: the rest wait there rather than split the group";
      return plan;
    }
    plan.reason = group + " needs one " + label + " domain; " +
                  (plan.considered.empty() ? "no node sent carries that label"
                                           : "the best, " + last_segment(plan.considered.front().domain) + ", has room for " +
                                                 std::to_string(plan.considered.front().room));
    return plan;
  }
  // Preferred (or the default): the level, then each level above that the candidates carry.
  if (level)
    for (size_t l = *level + 1; l-- > 0;)
      if (carried(candidates, l) && plan_at_level(r, candidates, l, level, gpus_per_member, false, plan)) return plan;
  if (plan_spread(r, candidates, level, gpus_per_member, plan)) return plan;
  int64_t total = 0;
  for (const Candidate& c : candidates) total += c.room;
  plan.reason = group + " does not fit: the nodes sent have room for " + std::to_string(total) + " at once";
  return plan;
}

}  // namespace gpu_extender
