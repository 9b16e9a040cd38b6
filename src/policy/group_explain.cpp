// A group member's explanation (explain.h): the group, its constraint, the domains considered, the plan.
#include <cstdio>

#include "common/json_writer.h"
#include "gpu_extender/policy/explain.h"

namespace gpu_extender {

std::optional<GroupExplanation> explain_group(const Policy& policy, const PodRequest& pod, std::span<const NodeInput> nodes) {
  const std::optional<GroupSpec> spec = group_spec_of(pod, policy.schema());
  if (!spec) return std::nullopt;
  GroupExplanation g;
  g.error = spec->invalid_reason;
  if (!g.error.empty()) {
    g.group = "group " + spec->key;
    return g;
  }
  const ViewSchema& schema = policy.schema();
  g.group = describe_group(*spec, pod, spec->size, schema);
  const std::string& label = schema.node_topology_labels[spec->constraint.level];
  switch (spec->constraint.kind) {
    case GroupConstraint::Kind::kRequired: g.constraint = "required " + label; break;
    case GroupConstraint::Kind::kPreferred: g.constraint = "preferred " + label; break;
    case GroupConstraint::Kind::kDefault:
      g.constraint = "none given: preferred at the finest level above the hostname that the nodes carry";
      break;
  }
  GroupPlanRequest request;
  request.policy = &policy;
  request.spec = &*spec;
  request.member = &pod;
  request.nodes = nodes;
  request.needed = spec->size;
  g.plan = plan_group(request);
  return g;
}

namespace {
std::string where(const GroupPlan& p) {
  std::string domains;
  for (const std::string& d : p.domains) domains += (domains.empty() ? "" : ", ") + d;
  return p.level_label.empty() ? "spread over " + p.spread_label + " domains " + domains
                               : "one " + p.level_label + " domain, " + domains;
}
}  // namespace

std::string render_group_table(const GroupExplanation& g) {
  std::string out = g.group + (g.live ? " (" + g.stage + ", live)" : "") + "\n";
  if (!g.error.empty()) return out + "  not understood: " + g.error + "\n";
  out += "  constraint: " + g.constraint + "\n";
  if (!g.plan.planned) out += "  no plan: " + g.plan.reason + "\n";
  else out += "  plan: " + where(g.plan) + "\n";
  for (const DomainRoom& d : g.plan.considered)
    out += "  domain " + d.domain + ": room for " + std::to_string(d.room) + " member(s), " + std::to_string(d.free_gpus) +
           " GPUs free, " + std::to_string(d.used_gpus) + " used\n";
  if (g.live) {
    out += "  members bound: " + std::to_string(g.bound) + ", passed (bound, binding or at the gate): " +
           std::to_string(g.passed) + "\n";
    for (const auto& [node, member] : g.slots) out += "  slot " + node + ": " + (member.empty() ? "held" : "taken by " + member) + "\n";
    if (!g.preempt_domain.empty()) {
      out += "  preempting in " + g.preempt_domain + ": " + std::to_string(g.victims_left) + " of " +
             std::to_string(g.victims.size()) + " victim(s) still to leave\n";
      for (const std::string& v : g.victims) out += "  victim " + v + "\n";
    }
    if (!g.preemption_note.empty()) out += "  preemption: " + g.preemption_note + "\n";
  } else {
    for (size_t i = 0; i < g.plan.slots.size(); ++i) out += "  member " + std::to_string(i) + " -> " + g.plan.slots[i] + "\n";
  }
  return out;
}

void append_group_json(std::string& out, const GroupExplanation& g) {
  out += "{\"group\":";
  append_json_string(out, g.group);
  out += ",\"error\":";
  append_json_string(out, g.error);
  out += ",\"constraint\":";
  append_json_string(out, g.constraint);
  out += ",\"live\":";
  out += g.live ? "true" : "false";
  out += ",\"planned\":";
  out += g.plan.planned ? "true" : "false";
  out += ",\"reason\":";
  append_json_string(out, g.plan.reason);
  out += ",\"level\":";
  append_json_string(out, g.plan.level_label.empty() ? g.plan.spread_label : g.plan.level_label);
  out += ",\"spread\":";
  out += g.plan.planned && g.plan.level_label.empty() ? "true" : "false";
  out += ",\"domains\":[";
  for (size_t i = 0; i < g.plan.domains.size(); ++i) {
    if (i) out += ",";
    append_json_string(out, g.plan.domains[i]);
  }
  out += "],\"considered\":[";
  for (size_t i = 0; i < g.plan.considered.size(); ++i) {
    const DomainRoom& d = g.plan.considered[i];
    if (i) out += ",";
    out += "{\"domain\":";
    append_json_string(out, d.domain);
    out += ",\"room\":" + std::to_string(d.room) + ",\"freeGpus\":" + std::to_string(d.free_gpus) +
           ",\"usedGpus\":" + std::to_string(d.used_gpus) + "}";
  }
  out += "],\"members\":[";
  if (g.live) {
    for (size_t i = 0; i < g.slots.size(); ++i) {
      if (i) out += ",";
      out += "{\"node\":";
      append_json_string(out, g.slots[i].first);
      out += ",\"member\":";
      append_json_string(out, g.slots[i].second);
      out += "}";
    }
  } else {
    for (size_t i = 0; i < g.plan.slots.size(); ++i) {
      if (i) out += ",";
      out += "{\"node\":";
      append_json_string(out, g.plan.slots[i]);
      out += ",\"member\":\"\"}";
    }
  }
  out += "],\"bound\":" + std::to_string(g.bound) + ",\"passed\":" + std::to_string(g.passed) + ",\"stage\":";
  append_json_string(out, g.stage);
  out += ",\"preemption\":{\"domain\":";
  append_json_string(out, g.preempt_domain);
  out += ",\"victims\":[";
  for (size_t i = 0; i < g.victims.size(); ++i) {
    if (i) out += ",";
    append_json_string(out, g.victims[i]);
  }
  out += "],\"victimsLeft\":" + std::to_string(g.victims_left) + ",\"note\":";
  append_json_string(out, g.preemption_note);
  out += "}}";
}

}  // namespace gpu_extender
