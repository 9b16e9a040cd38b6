// A group member's verdicts: its group's plan decides where it may go (group_book.h); on a planned
// node with a slot left the policy still judges it, over the node's usage as of now less the slot held
// for it (a node that changed since the plan refuses it with the policy's own reason).
#include <algorithm>

#include "common/json_writer.h"
#include "server/service/group_member.h"

namespace gpu_extender::verbs {
namespace {

constexpr std::string_view kGroupRule = "group";  // the rule named for refusals of the plan

// The snapshot with each name's slot (full mode: ws.full.slots; names mode: ws.names.slots()).
void take_snapshot(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args) {
  if (args.full_mode) gather_full_mode(ctx, ws, args);
  else ws.names.lookup(*ctx.parts.cluster, args);
}

// The request's nodes that the extender knows, with their usage as of now: the planning candidates.
// Called under the group book's lock, so the snapshot is taken again: the one before it may predate
// another group's plan, and two groups planned on the same GPUs would both be stuck.
std::span<const NodeInput> gather_candidates(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args) {
  GroupScratch& g = ws.group;
  take_snapshot(ctx, ws, args);
  if (args.full_mode) {
    g.candidates = ws.full.inputs;
  } else {
    g.candidates.clear();
    for (const uint32_t slot : ws.names.slots())
      if (slot != ViewSnapshot::kNoSlot) g.candidates.push_back(ws.names.input(slot));
  }
  return g.candidates;
}

// After the admission: the snapshot brought up to date, since admitting may have just held the
// member's room (judge_planned takes it off). Only the changed slots are copied; the names are found
// again only when a node came or went meanwhile (slots move only then).
void update_snapshot(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args) {
  const uint64_t names = ws.snapshot.names_generation();
  ws.snapshot.update(*ctx.parts.cluster);
  if (ws.snapshot.names_generation() != names) take_snapshot(ctx, ws, args);
}

// The slot of name i of the request in the snapshot (kNoSlot: none).
uint32_t slot_of(const Workspace& ws, const ExtenderArgs& args, size_t i) {
  return args.full_mode ? ws.full.slots[i] : ws.names.slots()[i];
}

// The node of name i of the request, or null when the extender does not know it.
const NodeView* node_of(const Workspace& ws, const ExtenderArgs& args, size_t i) {
  if (args.full_mode) return &args.nodes[i];
  const uint32_t slot = slot_of(ws, args, i);
  if (slot == ViewSnapshot::kNoSlot) return nullptr;
  const std::shared_ptr<const CachedNode>& node = ws.snapshot.node(slot);  // null: deleted since the lookup
  return node ? &node->view() : nullptr;
}

// Every name given the one shared verdict.
void refuse_all(Workspace& ws, size_t count, Fit fit, const std::string& reason) {
  GroupScratch& g = ws.group;
  g.refused = NodeVerdict{fit, reason, kGroupRule};
  g.refused_json.clear();
  append_json_string(g.refused_json, reason);
  g.verdict_of.assign(count, &g.refused);
  g.encoded.assign(count, EncodedVerdict{fit, g.refused_json});
}

// A planned node with a slot left (name i of the request): the policy's verdict, the slot held for
// this member taken off.
void judge_planned(Workspace& ws, const ExtenderArgs& args, size_t i, const NodeView& node, NodeVerdict& out) {
  const uint32_t slot = slot_of(ws, args, i);
  ResourceAmounts used = slot == ViewSnapshot::kNoSlot ? ResourceAmounts{} : ws.snapshot.used(slot);
  used.subtract(args.pod.requests);
  NodeInput probe(&node, &used);
  ws.policy->filter(args.pod, {&probe, 1}, ws.group.one);
  out = std::move(ws.group.one[0]);
}

}  // namespace

Result<GroupJudgement> judge_group_member(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args) {
  const std::optional<GroupSpec> spec = group_spec_of(args.pod, ws.policy->schema());
  if (!spec) return GroupJudgement::kNotMember;
  if (!ctx.parts.cluster || !ctx.parts.ledger)
    return Status::failed("pod " + pod_label(args.pod) + " is in group " + spec->key +
                          ": placing a group whole needs the extender's cluster view (Kubernetes API access: in a "
                          "pod, or --kubeconfig) to see every node's usage and hold the group's room; this "
                          "extender has none");
  take_snapshot(ctx, ws, args);
  GroupScratch& g = ws.group;
  // Whether the scheduler sent any of the plan's open nodes: the verdict pass below finds out anyway, so
  // the first admission takes it for granted, and only a pass that finds none asks again with the answer
  // (the plan then moves; usually it holds, and the request's names are read once).
  auto candidates = [&] { return gather_candidates(ctx, ws, args); };
  auto sent = [&](std::span<const std::string> open) {
    return std::any_of(args.node_names.begin(), args.node_names.end(),
                       [&](std::string_view name) { return std::binary_search(open.begin(), open.end(), name); });
  };
  g.admission = ctx.parts.ledger->admit(args.pod, *spec, *ws.policy, candidates,
                                        [](std::span<const std::string>) { return true; });
  const size_t count = args.node_names.size();
  using Kind = GroupBook::Admission::Kind;
  for (int pass = 0; pass < 2; ++pass) {
    if (g.admission.kind == Kind::kRefused) {
      refuse_all(ws, count, g.admission.fit, g.admission.reason);
      break;
    }
    refuse_all(ws, count, Fit::kResolvable, "outside the plan: " + g.admission.plan);
    update_snapshot(ctx, ws, args);
    const std::vector<std::string>& open = g.admission.open;
    g.planned.resize(open.size());  // sized first: verdict_of points into it
    g.planned_json.resize(open.size());
    size_t judged = 0, found = 0;
    for (size_t i = 0; i < count && found < open.size(); ++i) {
      if (!std::binary_search(open.begin(), open.end(), args.node_names[i])) continue;
      ++found;
      const NodeView* node = node_of(ws, args, i);
      if (!node) continue;  // not in the cache: refused as outside what the extender can judge
      NodeVerdict& v = g.planned[judged];
      std::string& json = g.planned_json[judged++];
      judge_planned(ws, args, i, *node, v);
      json.clear();
      if (!v.passed()) append_json_string(json, v.reason);
      g.verdict_of[i] = &v;
      g.encoded[i] = {v.fit, json};
    }
    if (found > 0 || pass > 0) break;
    g.admission = ctx.parts.ledger->admit(args.pod, *spec, *ws.policy, candidates, sent);
  }
  if (args.full_mode) {  // the encoder takes a verdict per node
    g.verdicts.clear();
    for (const NodeVerdict* v : g.verdict_of) g.verdicts.push_back(*v);
  }
  return GroupJudgement::kJudged;
}

}  // namespace gpu_extender::verbs
