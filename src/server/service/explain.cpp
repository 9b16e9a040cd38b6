// POST /explain: the ExtenderArgs of /filter, answered with every node's verdict and scores, best first,
// and where each fact the rules read came from.
#include <ctime>

#include "gpu_extender/policy/explain.h"
#include "gpu_extender/usage/gpu_utilization.h"
#include "gpu_extender/state/placement_ledger.h"
#include "server/service/verb_context.h"

namespace gpu_extender::verbs {
namespace {

// 2026-11-30T18:00:00Z
std::string format_utc(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// Where gpuIdle's utilisation came from: Prometheus' value, or since when it is stale.
void add_utilization_facts(const GpuUtilizationSource& utilization, Explanation& e) {
  const auto now = GpuUtilizationSource::Clock::now();
  for (NodeExplanation& n : e.nodes) {
    const GpuUtilizationSource::Reading r = utilization.reading(n.node, now);
    std::string value = "none";
    if (r.fresh) value = std::to_string(*r.fresh);
    else if (r.last) value = "stale since " + format_utc(r.seen);
    n.facts.push_back({"gpuUtilization", value, utilization.describe()});
  }
}

// A DRA node's devices (ClusterView::dra_node): its physical GPUs, each one a claim holds with the claim,
// and each one no whole-GPU claim can get with why (in MIG mode, tainted...).
void add_dra_facts(const ClusterView& view, Explanation& e) {
  auto joined = [](const auto& pairs, std::string_view between) {
    std::string out;
    for (const auto& [gpu, what] : pairs) out.append(out.empty() ? "" : ", ").append(gpu).append(between).append(what);
    return out.empty() ? std::string("none") : out;
  };
  for (NodeExplanation& n : e.nodes) {
    const std::optional<DraNodeReport> dra = view.dra_node(n.node);
    if (!dra) continue;
    std::string gpus;
    for (const std::string& gpu : dra->gpus) gpus.append(gpus.empty() ? "" : ", ").append(gpu);
    n.facts.push_back({"draGpus", gpus.empty() ? "none" : gpus, "resourceslices"});
    n.facts.push_back({"draHeldGpus", joined(dra->held, " by "), "resourceclaims"});
    n.facts.push_back({"draUnavailableGpus", joined(dra->unavailable, ": "), "resourceslices"});
  }
}

}  // namespace

int explain(const VerbContext& ctx, Workspace& ws, VerbSummary& summary) {
  ExtenderArgs& args = decode_args(ws, summary);
  add_claimed_gpus(ctx, args.pod);
  std::vector<NodeInput> inputs;
  std::vector<std::string_view> unknown;  // names mode: names the node cache lacks
  if (args.full_mode) {
    gather_full_mode(ctx, ws, args);
    inputs = ws.full.inputs;
  } else {
    if (!ctx.parts.cluster) return fail(ws, 503, kNoNodeCache, summary);
    ws.names.lookup(*ctx.parts.cluster, args);
    for (size_t i = 0; i < args.node_names.size(); ++i) {
      const uint32_t slot = ws.names.slots()[i];
      if (slot == ViewSnapshot::kNoSlot) unknown.push_back(args.node_names[i]);
      else inputs.push_back(ws.names.input(slot));
    }
  }
  add_live_utilization(ctx, inputs);
  Explanation e = gpu_extender::explain(*ws.policy, args.pod, inputs);
  if (ctx.parts.utilization) add_utilization_facts(*ctx.parts.utilization, e);
  if (ctx.parts.cluster) add_dra_facts(*ctx.parts.cluster, e);
  // A group being placed: the book's plan, with the slots its members took, rather than a new one.
  if (e.group && ctx.parts.ledger)
    if (const auto report = ctx.parts.ledger->group_report(PendingPod::group_key_of(args.pod))) {
      e.group->plan = report->plan;
      e.group->live = true;
      e.group->bound = report->bound;
      e.group->passed = report->passed;
      e.group->stage = GroupBook::stage_name(report->stage);
      e.group->slots.clear();
      for (const auto& slot : report->slots) e.group->slots.emplace_back(slot.node, slot.member);
      e.group->preempt_domain = report->preempt_domain;
      e.group->victims = report->victims;
      e.group->victims_left = report->victims_left;
      e.group->preemption_note = report->preemption_note;
    }
  for (std::string_view name : unknown) {
    NodeExplanation n;
    n.node = std::string(name);
    n.verdict = {Fit::kResolvable, "node is not in the extender's node cache", "nodeCache"};
    e.nodes.push_back(std::move(n));
  }
  ws.answer = render_explanation_json(e);
  summary.nodes_out = e.nodes.size();
  return 200;
}

}  // namespace gpu_extender::verbs
