#include "gpu_extender/policy/explain.h"

#include <algorithm>
#include <cstdio>

#include "gpu_extender/common/quantity.h"
#include "gpu_extender/policy/gpu_memory_size.h"
#include "gpu_extender/policy/gpu_share.h"
#include "common/json_writer.h"

namespace gpu_extender {

Explanation explain(const Policy& policy, const PodRequest& pod, std::span<const NodeInput> nodes) {
  Explanation out;
  out.pod = std::string(pod.ns) + "/" + std::string(pod.name);
  out.placement = pod.placement == Placement::kSpread ? "spread" : "binpack";
  std::vector<NodeVerdict> verdicts;
  policy.filter(pod, nodes, verdicts);
  std::vector<NodeInput> passing;
  std::vector<size_t> passing_index;
  const ViewSchema& schema = policy.schema();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeView& node = *nodes[i].node;
    out.nodes.push_back({std::string(node.name), verdicts[i], {}, 0, -1, {}});
    // A DRA node's GPU facts come from its ResourceSlices (state/dra_inventory.h), not from a label.
    const std::string from_slices = "resourceslices of " + schema.dra_gpu_driver;
    auto fact = [&](const char* name, const std::optional<std::string_view>& value, uint8_t source,
                    const std::vector<std::string>& labels) {
      if (!value) return;
      if (node.gpus_from_dra) out.nodes.back().facts.push_back({name, std::string(*value), from_slices});
      else if (source < labels.size()) out.nodes.back().facts.push_back({name, std::string(*value), labels[source]});
    };
    fact("gpuModel", node.gpu_model, node.gpu_model_label, schema.node_gpu_model_labels);
    fact("gpuMemory", node.gpu_memory, node.gpu_memory_label, schema.node_gpu_memory_labels);
    // What the memory rule compares: the reported figure judged as the size the GPU is sold with.
    if (node.gpu_memory)
      if (const Result<int64_t> reported = parse_mebibytes(*node.gpu_memory); reported.ok())
        out.nodes.back().facts.push_back({"gpuMemoryJudged", std::to_string(judged_gpu_memory_mib(*reported)),
                                          "gpuMemory " + std::to_string(*reported) + " MiB as the size it is sold with"});
    fact("gpuCount", node.gpu_count, node.gpu_count_label, schema.node_gpu_count_labels);
    fact("gpuFamily", node.gpu_family, node.gpu_family_label, schema.node_gpu_family_labels);
    fact("gpuReplicas", node.gpu_replicas, node.gpu_replicas_label, schema.node_gpu_replicas_labels);
    // MIG mixed: one pair per profile the node is labelled with, named by the profile's resource.
    for (size_t k = 0; k < schema.mig_profiles(); ++k) {
      const std::string& resource = schema.resources.name(schema.mig_resource(k));
      auto mig_fact = [&](const char* what, const std::optional<std::string_view>& value, const std::string& label) {
        if (value) out.nodes.back().facts.push_back({std::string(what) + " " + resource, std::string(*value), label});
      };
      mig_fact("migSlices", node.mig_count[k], schema.mig_count_labels[k]);
      mig_fact("migSliceMemory", node.mig_memory[k], schema.mig_memory_labels[k]);
    }
    // GPU sharing: each device's free memory, for pods that ask for some.
    if (pod.wants_shared_gpu())
      if (const auto gpus = shared_gpus(nodes[i]))
        out.nodes.back().facts.push_back({"sharedGpus", describe_shared_gpus(*gpus, policy.config().shared_gpu_memory_unit),
                                          schema.resources.name(ViewSchema::kSharedGpuMemory)});
    if (std::string path = describe_domain_path(node, schema); !path.empty())
      out.nodes.back().facts.push_back({"topology", std::move(path), "topology.levels"});
    if (verdicts[i].passed()) {
      passing.push_back(nodes[i]);
      passing_index.push_back(i);
    }
  }
  out.group = explain_group(policy, pod, nodes);
  ScoreSheet sheet;
  policy.score(pod, passing, sheet);
  for (size_t k = 0; k < passing.size(); ++k) {
    NodeExplanation& n = out.nodes[passing_index[k]];
    for (const auto& column : sheet.columns)
      n.scores.push_back({std::string(column.scorer), column.weight, column.applied, column.raw[k]});
    n.combined = sheet.combined[k];
    n.final_score = sheet.final[k];
  }
  std::stable_sort(out.nodes.begin(), out.nodes.end(), [](const NodeExplanation& a, const NodeExplanation& b) {
    if (a.verdict.passed() != b.verdict.passed()) return a.verdict.passed();
    if (!a.verdict.passed()) return a.node < b.node;
    if (a.final_score != b.final_score) return a.final_score > b.final_score;
    if (a.combined != b.combined) return a.combined > b.combined;
    return a.node < b.node;
  });
  return out;
}

const NodeExplanation* best_node(const Explanation& e) {
  return !e.nodes.empty() && e.nodes.front().verdict.passed() ? &e.nodes.front() : nullptr;
}

namespace {
const char* verdict_word(Fit fit) {
  switch (fit) {
    case Fit::kPass: return "pass";
    case Fit::kResolvable: return "fail";
    case Fit::kUnresolvable: return "fail (unresolvable)";
  }
  return "?";
}
std::string fixed(double v, int decimals = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
}  // namespace

std::string render_explanation_table(const Explanation& e) {
  // Columns: node, verdict, final, combined, one per scorer "name(w)", reason.
  std::vector<std::string> scorer_heads;
  for (const auto& n : e.nodes)
    if (!n.scores.empty()) {
      for (const auto& s : n.scores) scorer_heads.push_back(s.scorer + "(w" + std::to_string(s.weight) + ")");
      break;
    }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head{"NODE", "VERDICT", "SCORE", "COMBINED"};
  head.insert(head.end(), scorer_heads.begin(), scorer_heads.end());
  head.push_back("REASON");
  rows.push_back(head);
  for (const auto& n : e.nodes) {
    std::vector<std::string> row{n.node, verdict_word(n.verdict.fit), n.final_score < 0 ? "-" : std::to_string(n.final_score),
                                 n.final_score < 0 ? "-" : fixed(n.combined)};
    for (size_t i = 0; i < scorer_heads.size(); ++i) {
      if (i < n.scores.size()) row.push_back(n.scores[i].applied ? fixed(n.scores[i].raw) : "n/a");
      else row.push_back("-");
    }
    row.push_back(n.verdict.passed() ? "" : n.verdict.reason);
    rows.push_back(row);
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  // A group member goes where its group's plan says, whatever the policy's best is.
  std::string verdict = best_node(e) ? "best node " + best_node(e)->node : std::string("no node passes");
  if (e.group)
    verdict = e.group->plan.planned && !e.group->plan.slots.empty() ? "planned node " + e.group->plan.slots.front()
                                                                    : "no node: its group is not planned";
  std::string out = "pod " + e.pod + " (placement " + e.placement + "): " + verdict + "\n";
  if (e.group) out += render_group_table(*e.group);
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string render_explanation_words(const Explanation& e) {
  std::string out = "Pod " + e.pod;
  if (const NodeExplanation* best = best_node(e)) {
    out += " fits: node " + best->node + " is the best of " + std::to_string(e.nodes.size()) + " (score " +
           std::to_string(best->final_score) + " of 10).";
  } else {
    out += " fits no node: ";
    // The refusals by rule, in order of first appearance, with the first reason each gave.
    std::vector<std::pair<std::string, std::pair<size_t, std::string>>> by_rule;
    for (const auto& n : e.nodes) {
      if (n.verdict.passed()) continue;
      auto it = std::find_if(by_rule.begin(), by_rule.end(), [&](const auto& r) { return r.first == n.verdict.rule; });
      if (it == by_rule.end()) by_rule.push_back({std::string(n.verdict.rule), {1, n.node + ": " + n.verdict.reason}});
      else ++it->second.first;
    }
    if (by_rule.empty()) out += "the cluster has no node.";
    for (size_t i = 0; i < by_rule.size(); ++i)
      out += (i ? "; " : "") + std::to_string(by_rule[i].second.first) + " refused by " + by_rule[i].first + " (" +
             by_rule[i].second.second + ")";
    if (!by_rule.empty()) out += ".";
  }
  if (e.group) {
    const GroupExplanation& g = *e.group;
    out += "\nIt is a member of " + g.group + " (" + g.constraint + "): ";
    if (!g.error.empty()) out += g.error;
    else if (g.plan.planned) out += "planned on " + std::to_string(g.plan.slots.size()) + " nodes";
    else out += "not planned: " + g.plan.reason;
    if (g.live) out += " (" + g.stage + ", " + std::to_string(g.bound) + " bound)";
    out += ".";
  }
  return out + "\n";
}

std::string render_explanation_json(const Explanation& e) {
  std::string out = "{\"pod\":";
  append_json_string(out, e.pod);
  out += ",\"placement\":";
  append_json_string(out, e.placement);
  out += ",\"best\":";
  if (const NodeExplanation* best = best_node(e)) append_json_string(out, best->node);
  else out += "null";
  if (e.group) {
    out += ",\"group\":";
    append_group_json(out, *e.group);
  }
  out += ",\"nodes\":[";
  for (size_t i = 0; i < e.nodes.size(); ++i) {
    const NodeExplanation& n = e.nodes[i];
    if (i) out.push_back(',');
    out += "{\"node\":";
    append_json_string(out, n.node);
    out += ",\"verdict\":";
    append_json_string(out, n.verdict.passed() ? "pass" : (n.verdict.fit == Fit::kResolvable ? "fail" : "fail-unresolvable"));
    if (!n.verdict.passed()) {
      out += ",\"rule\":";
      append_json_string(out, n.verdict.rule);
      out += ",\"reason\":";
      append_json_string(out, n.verdict.reason);
    } else {
      out += ",\"score\":";
      append_json_int(out, n.final_score);
      out += ",\"combined\":" + fixed(n.combined, 3) + ",\"scorers\":[";
      for (size_t s = 0; s < n.scores.size(); ++s) {
        if (s) out.push_back(',');
        out += "{\"name\":";
        append_json_string(out, n.scores[s].scorer);
        out += ",\"weight\":" + std::to_string(n.scores[s].weight) + ",\"applied\":" +
               (n.scores[s].applied ? "true" : "false") + ",\"raw\":" + fixed(n.scores[s].raw, 3) + "}";
      }
      out += "]";
    }
    if (!n.facts.empty()) {
      out += ",\"facts\":{";
      for (size_t f = 0; f < n.facts.size(); ++f) {
        if (f) out += ",";
        append_json_string(out, n.facts[f].name);
        out += ":{\"value\":";
        append_json_string(out, n.facts[f].value);
        out += ",\"label\":";
        append_json_string(out, n.facts[f].label);
        out += "}";
      }
      out += "}";
    }
    out += "}";
  }
  out += "]}";
  return out;
}

}  // namespace gpu_extender
