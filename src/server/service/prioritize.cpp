// POST /prioritize: a score 0..10 for every node sent, from the nodes that pass the filter scored
// together; a node that fails it scores 0. With scoreBaseline lowest (the default) the lowest score of
// the request is taken from every node's. The answer lists the nodes that score above 0 (see
// encode_host_priorities: to the scheduler a node left out scores 0).
#include <algorithm>
#include <array>

#include "gpu_extender/wire/wire_encode.h"
#include "server/service/group_member.h"
#include "server/service/verb_context.h"

namespace gpu_extender::verbs {
namespace {


// The three best scores, best first, for the request log: one pass, nothing allocated per node.
std::string describe_top_scores(const ExtenderArgs& args, const std::vector<int64_t>& scores) {
  constexpr size_t kTop = 3;
  std::array<size_t, kTop> top{};
  size_t kept = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    size_t at = kept < kTop ? kept++ : kTop;
    while (at > 0 && scores[top[at - 1]] < scores[i]) {
      if (at < kTop) top[at] = top[at - 1];
      --at;
    }
    if (at < kTop) top[at] = i;
  }
  std::string out;
  for (size_t k = 0; k < kept; ++k) {
    if (k) out.push_back(' ');
    out += std::string(args.node_names[top[k]]) + "=" + std::to_string(scores[top[k]]);
  }
  return out;
}

void score_full_mode(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args) {
  PrioritizeScratch& scratch = ws.prioritize;
  gather_full_mode(ctx, ws, args);
  const std::vector<NodeInput>& inputs = ws.full.inputs;
  ws.policy->filter(args.pod, inputs, scratch.verdicts);
  scratch.scored_inputs.clear();
  scratch.place.assign(inputs.size(), PrioritizeScratch::kNotScored);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!scratch.verdicts[i].passed()) continue;
    scratch.place[i] = scratch.scored_inputs.size();
    scratch.scored_inputs.push_back(inputs[i]);
  }
  add_live_utilization(ctx, scratch.scored_inputs);
  ws.policy->score(args.pod, scratch.scored_inputs, scratch.sheet);
}

void score_names_mode(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args) {
  PrioritizeScratch& scratch = ws.prioritize;
  ws.names.judge(*ctx.parts.cluster, ws.policy, args);
  const std::vector<uint32_t>& slots = ws.names.slots();
  scratch.place.assign(args.node_names.size(), PrioritizeScratch::kNotScored);  // names the cache lacks score 0
  scratch.scored_slots.clear();
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] == ViewSnapshot::kNoSlot || !ws.names.passed(slots[i])) continue;
    scratch.place[i] = scratch.scored_slots.size();
    scratch.scored_slots.push_back(slots[i]);
  }
  ws.names.score(args.pod, ctx.parts.utilization.get(), scratch.scored_slots, scratch.sheet);
}

}  // namespace

int prioritize(const VerbContext& ctx, Workspace& ws, VerbSummary& summary) {
  ExtenderArgs& args = decode_args(ws, summary);
  add_claimed_gpus(ctx, args.pod);
  begin_scheduling(ctx, args.pod, true, summary);  // scores rank usage: the pods in flight count
  // HostPriorityList has no Error field: a request that cannot be scored is answered with a status
  // (the scheduler ignores a failed prioritize and keeps its own scores).
  if (!args.full_mode && !ctx.parts.cluster) return fail(ws, 503, kNoNodeCache, summary);
  // Only nodes that pass the filter are scored, together, as the scheduler sends them after /filter
  // (this matters to an extender registered with prioritizeVerb alone, which is sent nodes its filter
  // would refuse).
  PrioritizeScratch& scratch = ws.prioritize;
  const Result<GroupJudgement> group = judge_group_member(ctx, ws, args);
  if (!group.ok()) return fail(ws, 503, group.why(), summary);
  if (*group == GroupJudgement::kJudged) {
    // A group member: its planned nodes with a slot left first, the rest nowhere.
    scratch.scores.assign(args.node_names.size(), 0);
    for (size_t i = 0; i < scratch.scores.size(); ++i)
      if (ws.group.verdict_of[i]->passed()) scratch.scores[i] = kMaxExtenderPriority;
  } else {
    if (args.full_mode) score_full_mode(ctx, ws, args);
    else score_names_mode(ctx, ws, args);
    scratch.scores.assign(args.node_names.size(), 0);
    for (size_t i = 0; i < scratch.scores.size(); ++i)
      if (scratch.place[i] != PrioritizeScratch::kNotScored) scratch.scores[i] = scratch.sheet.final[scratch.place[i]];
  }
  if (ws.policy->config().score_baseline == ScoreBaseline::kLowest && !scratch.scores.empty()) {
    // The scheduler ranks nodes by their totals: the same amount off every node's score changes no
    // rank, and the nodes at the lowest (every node, in a burst on an empty cluster) leave the answer.
    const int64_t lowest = *std::min_element(scratch.scores.begin(), scratch.scores.end());
    if (lowest > 0)
      for (int64_t& score : scratch.scores) score -= lowest;
  }
  encode_host_priorities(args.node_names, scratch.scores, ws.answer, args.names_verbatim);
  summary.nodes_out = args.node_names.size();
  summary.top_scores = describe_top_scores(args, scratch.scores);
  if (!args.node_names.empty() && !args.pod.native_pod_group) expect_bind(ctx, args.pod);  // see filter
  return 200;
}

}  // namespace gpu_extender::verbs
