// POST /filter: every node's verdict; the passing nodes (full mode: their objects, as sent) and the
// refused ones with their reasons, resolvable or not.
#include <algorithm>

#include "common/json_writer.h"
#include "gpu_extender/wire/wire_encode.h"
#include "server/service/group_member.h"
#include "server/service/verb_context.h"

namespace gpu_extender::verbs {
namespace {

// How long a group member refused while its victims leave waits for the watch (see filter()): the lag of
// one watch behind another on the same API server, with room to spare.
constexpr std::chrono::milliseconds kGroupCatchUp{200};

// Names mode: known nodes answer from the memo, reasons encoded already; names the cache lacks get a
// verdict of this request's own (scratch.verdicts and scratch.reason_json, sized first: the answer
// points into them).
void judge_names(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args) {
  FilterScratch& scratch = ws.filter;
  ws.names.judge(*ctx.parts.cluster, ws.policy, args);
  const std::vector<uint32_t>& slots = ws.names.slots();
  const size_t count = args.node_names.size();
  scratch.encoded.resize(count);
  const size_t unknown = static_cast<size_t>(std::count(slots.begin(), slots.end(), ViewSnapshot::kNoSlot));
  scratch.verdicts.resize(unknown);
  if (scratch.reason_json.size() < unknown) scratch.reason_json.resize(unknown);
  for (size_t i = 0, k = 0; i < count; ++i) {
    const uint32_t slot = slots[i];
    if (slot != ViewSnapshot::kNoSlot) {
      const NodeVerdict& v = ws.names.verdict(slot);  // its address only: read when it did not pass
      scratch.verdict_of[i] = &v;
      scratch.encoded[i] = ws.names.passed(slot) ? EncodedVerdict{Fit::kPass, {}}
                                                 : EncodedVerdict{v.fit, ws.names.reason_json(slot)};
      continue;
    }
    NodeVerdict& v = scratch.verdicts[k];
    v = {Fit::kResolvable,
         "node " + std::string(args.node_names[i]) +
             " is not in the extender's node cache (just added, or the cache is not synced yet)",
         "nodeCache"};
    std::string& json = scratch.reason_json[k++];
    json.clear();
    append_json_string(json, v.reason);
    scratch.verdict_of[i] = &v;
    scratch.encoded[i] = {v.fit, json};
  }
}

// Counts the passing nodes and the refusals per rule (and, at debug level, every reason). `encoded`
// (names mode, not a group member): the verdicts' fits, read in order instead of each verdict.
void summarize(Workspace& ws, const ExtenderArgs& args, const std::vector<EncodedVerdict>* encoded,
               VerbSummary& summary) {
  FilterScratch& scratch = ws.filter;
  scratch.passing_slots.clear();
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    if (encoded != nullptr && (*encoded)[i].fit == Fit::kPass) {
      ++summary.nodes_out;
      scratch.passing_slots.push_back(ws.names.slots()[i]);
      continue;
    }
    const NodeVerdict& v = *scratch.verdict_of[i];
    if (v.passed()) {
      ++summary.nodes_out;
      if (!args.full_mode) scratch.passing_slots.push_back(ws.names.slots()[i]);
      continue;
    }
    // Rule names are the rules' own constants: the same pointer almost always settles it.
    auto counted = std::find_if(summary.rejections.begin(), summary.rejections.end(), [&](const auto& r) {
      return (r.first.data() == v.rule.data() && r.first.size() == v.rule.size()) || r.first == v.rule;
    });
    if (counted == summary.rejections.end()) summary.rejections.emplace_back(v.rule, 1);
    else ++counted->second;
    if (summary.want_reasons) summary.reasons.emplace_back(std::string(args.node_names[i]), v.reason);
  }
}

// A pod that is not a group member, judged on its own (full mode or names mode).
void judge_alone(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args) {
  FilterScratch& scratch = ws.filter;
  if (args.full_mode) {
    gather_full_mode(ctx, ws, args);
    ws.policy->filter(args.pod, ws.full.inputs, scratch.verdicts);
    for (size_t i = 0; i < scratch.verdict_of.size(); ++i) scratch.verdict_of[i] = &scratch.verdicts[i];
  } else {
    judge_names(ctx, ws, args);
  }
}

// No node passed and at least one was refused as resolvable (usage, a name the cache lacks): the
// scheduler will try to preempt for the pod. Every node it sends has passed its own resource fit on
// its cache, so a refusal on usage means this view disagrees with it, usually because the scheduler's
// informer saw pods leave (victims of its last preemption) a few milliseconds before this watch did.
// Refused then, the pod finds no victims to preempt and waits in the unschedulable queue for a cluster
// event that may not come for minutes (kube-scheduler 1.33+ retries at once: SchedulerPopFromBackoffQ).
// So the pod is judged again on each change the watch brings, while it rests between batches and until
// --view-catch-up-ms has passed.
bool worth_catching_up(const Workspace& ws, const ExtenderArgs& args) {
  bool resolvable = false;
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    const Fit fit = args.full_mode ? ws.filter.verdicts[i].fit : ws.filter.encoded[i].fit;
    if (fit == Fit::kPass) return false;
    resolvable = resolvable || fit == Fit::kResolvable;
  }
  return resolvable;
}

// Judges again (`judge`) on each change the watch brings after view version `seen`, until `done` or `wait`
// has passed (ClusterView::catch_up; `expecting`: changes are known to be on their way).
template <typename Judge, typename Done>
void judge_while_catching_up(const ClusterView& view, uint64_t seen, std::chrono::milliseconds wait, bool expecting,
                             const Judge& judge, const Done& done) {
  const auto deadline = ClusterView::Clock::now() + wait;
  while (!done() && view.catch_up(seen, deadline, expecting)) {
    seen = view.change_count();
    judge();
  }
}

}  // namespace

int filter(const VerbContext& ctx, Workspace& ws, VerbSummary& summary) {
  ExtenderArgs& args = decode_args(ws, summary);
  const bool through_claims = add_claimed_gpus(ctx, args.pod);
  // Packing needs the pods in flight counted at /prioritize, not here: a /filter waits only when one of
  // them can change its verdicts, so it runs while the previous pod is being bound.
  begin_scheduling(ctx, args.pod, binds_in_flight_may_change_verdicts(args.pod, through_claims, ws.policy->schema()),
                   summary);
  if (!args.full_mode && !ctx.parts.cluster) {
    // ExtenderFilterResult has an Error field, and the scheduler logs it (it drops non-200 bodies).
    encode_filter_error(kNoNodeCache, ws.answer);
    summary.error = std::string(kNoNodeCache);
    summary.error_cause = AnswerError::kNoNodeCache;
    return 200;
  }
  FilterScratch& scratch = ws.filter;
  scratch.verdict_of.resize(args.node_names.size());
  // With --view-catch-up-ms 0 there is no view to catch up with: the watch is never hurried either.
  const ClusterView* view = ctx.parts.view_catch_up.count() > 0 ? ctx.parts.cluster.get() : nullptr;
  const uint64_t seen = view ? view->change_count() : 0;  // what the judgements below are as of, at least
  Result<GroupJudgement> group = judge_group_member(ctx, ws, args);
  if (group.ok() && *group == GroupJudgement::kJudged && view && ws.group.admission.victims_leaving) {
    // The scheduler retries a member on the deletion of a pod evicted for its group, which this watch
    // may not have read yet: wait a little for it (see worth_catching_up). Bounded by kGroupCatchUp, not
    // a preemptor's second: a member refused while its victims still terminate stalls the scheduler's
    // serial cycle for that long on every retry.
    const auto wait = std::max<std::chrono::milliseconds>(ctx.parts.view_catch_up, kGroupCatchUp);
    judge_while_catching_up(*view, seen, wait, true, [&] { group = judge_group_member(ctx, ws, args); },
                            [&] { return !ws.group.admission.victims_leaving; });
  }
  if (!group.ok()) {
    encode_filter_error(group.why(), ws.answer);
    summary.error = group.why();
    summary.error_cause = AnswerError::kGroupNoClusterView;
    return 200;
  }
  const bool member = *group == GroupJudgement::kJudged;
  if (member) {
    scratch.verdict_of = ws.group.verdict_of;
  } else {
    judge_alone(ctx, ws, args);
    if (view && worth_catching_up(ws, args)) {  // rare: the clock is read only then
      // A preemptor's victims are on their way out: it waits for them longer, and even while no watch
      // rests, since their deletions may not have reached the watch yet (preemptor_memory.h).
      const bool preemptor = ctx.preemptors.preempting(args.pod.uid);
      const auto wait = preemptor ? std::max<std::chrono::milliseconds>(ctx.parts.view_catch_up, PreemptorMemory::kCatchUp)
                                  : ctx.parts.view_catch_up;
      judge_while_catching_up(*view, seen, wait, preemptor, [&] { judge_alone(ctx, ws, args); },
                              [&] { return !worth_catching_up(ws, args); });
    }
  }
  summarize(ws, args, !member && !args.full_mode ? &scratch.encoded : nullptr, summary);
  if (args.full_mode) {
    encode_filter_result(args, member ? ws.group.verdicts : scratch.verdicts, ws.answer);  // reasons escaped there
  } else {
    const ByteRange names = encode_filter_result(args, member ? ws.group.encoded : scratch.encoded, ws.answer);
    // The list /prioritize will be sent (kube-scheduler passes on the answer's names, in order).
    ws.names.remember_answer(std::string_view(ws.answer).substr(names.begin, names.end - names.begin),
                             scratch.passing_slots);
  }
  // One node passing: no /prioritize comes. A member of a native pod group binds only once the scheduler
  // has filtered the whole group against each candidate placement: nobody should wait for it.
  if (summary.nodes_out > 0 && !args.pod.native_pod_group) expect_bind(ctx, args.pod);
  return 200;
}

}  // namespace gpu_extender::verbs
