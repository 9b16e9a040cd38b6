#include <algorithm>
#include <array>
#include <ctime>
#include <thread>

#include "gpu_extender/explain.h"
#include "gpu_extender/gpu_utilization.h"
#include "gpu_extender/extender_service.h"
#include "gpu_extender/gpu_share.h"
#include "gpu_extender/wire.h"
#include "gpu_extender/json_writer.h"
#include "gpu_extender/wire_encode.h"

namespace gpu_extender {
namespace {

constexpr size_t kNotCached = static_cast<size_t>(-1);

constexpr std::string_view kNoNodeCache =
    "NodeNames mode (nodeCacheCapable: true) needs the extender's own node cache, which needs Kubernetes API "
    "access (in a pod, or --kubeconfig); without it, configure the scheduler with nodeCacheCapable: false so "
    "that it sends full Node objects";

int fail(Workspace& ws, int status, std::string_view message, VerbSummary& summary) {
  ws.answer.clear();
  encode_error_object(message, ws.answer);
  summary.error = std::string(message);
  return status;
}

// 2026-11-30T18:00:00Z
std::string format_utc(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string pod_label(const PodRequest& pod) { return std::string(pod.ns) + "/" + std::string(pod.name); }

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

// As many as the default number of workers, so that steady load never frees and re-creates a
// workspace (which fragmented the heap: resident memory crept under concurrency 64).
size_t idle_workspaces_to_keep() { return std::max(4U, 2 * std::thread::hardware_concurrency()); }

}  // namespace

ExtenderService::ExtenderService(ServiceParts parts)
    : parts_(std::move(parts)),
      workspaces_(idle_workspaces_to_keep()),
      // Waiting for binds makes sense only where this extender binds.
      tracker_(parts_.binder ? parts_.bind_wait : std::chrono::milliseconds(0)) {
  policy_.store(parts_.policy);
  if (!parts_.usage) parts_.usage = parts_.cluster ? std::shared_ptr<const UsageSource>(parts_.cluster) : make_no_usage();
}

int ExtenderService::handle(Verb verb, Workspace& ws, VerbSummary& summary) const {
  ws.answer.clear();
  ws.policy = policy_.load();
  try {
    switch (verb) {
      case Verb::kFilter: return filter(ws, summary);
      case Verb::kPrioritize: return prioritize(ws, summary);
      case Verb::kBind: return bind(ws, summary);
      case Verb::kPreempt: return preempt(ws, summary);
      case Verb::kExplain: return explain(ws, summary);
    }
  } catch (const DecodeError& e) {
    return fail(ws, 400, e.what(), summary);
  }
  return fail(ws, 500, "unknown verb", summary);
}

Reply ExtenderService::handle(Verb verb, std::string_view body, VerbSummary& summary) const {
  std::shared_ptr<Workspace> ws = workspaces_.acquire();
  ws->body.reserve(body.size() + kJsonPadding);
  ws->body.assign(body);
  Reply reply;
  reply.status = handle(verb, *ws, summary);
  reply.body = ws->answer;
  return reply;
}

const ExtenderArgs& ExtenderService::decode_args(Workspace& ws, VerbSummary& summary, bool scheduling) const {
  const ExtenderArgs& args = ws.decoder.decode_extender_args(ws.body, ws.policy->schema());
  summary.pod = pod_label(args.pod);
  summary.nodes_in = args.node_names.size();
  if (scheduling) {
    if (parts_.cluster) parts_.cluster->remember_pending(args.pod);  // /bind will need its requests
    // The pod scored just before this one may be on its way to /bind: judge this one on usage that
    // counts it (usage is read after the wait).
    summary.bind_wait_ms = std::chrono::duration<double, std::milli>(tracker_.wait_for_others(args.pod.uid)).count();
  }
  return args;
}

bool ExtenderService::gather(Workspace& ws, const ExtenderArgs& args) const {
  std::vector<size_t>& input_index = ws.input_index;
  ws.inputs.clear();
  input_index.clear();
  if (args.full_mode) {
    const UsageSource& usage = *parts_.usage;
    ws.inputs.reserve(args.nodes.size());
    ws.usage.resize(args.nodes.size());  // sized first: the inputs point into it
    for (size_t i = 0; i < args.nodes.size(); ++i) {
      input_index.push_back(ws.inputs.size());
      ws.usage[i] = usage.used_on(args.nodes[i].name);
      ws.inputs.push_back({&args.nodes[i], ws.usage[i]});
    }
    return true;
  }
  if (!parts_.cluster) return false;
  // Names mode: the nodes and their usage come from the cache, all looked up at one instant and held
  // (in the workspace's memo) for the request.
  parts_.cluster->lookup(args.node_names, ws.slots, ws.node_memo);
  ws.inputs.reserve(args.node_names.size());
  for (uint32_t slot : ws.slots) {
    if (slot == NodeMemo::kNoSlot) {
      input_index.push_back(kNotCached);
      continue;
    }
    input_index.push_back(ws.inputs.size());
    ws.inputs.push_back({&ws.node_memo.node[slot]->view(), &ws.node_memo.used[slot]});
  }
  return true;
}

void ExtenderService::judge_names(Workspace& ws, const ExtenderArgs& args) const {
  const NodeMemo& nodes = ws.node_memo;
  VerdictMemo& memo = ws.verdict_memo;
  parts_.cluster->lookup(args.node_names, ws.slots, ws.node_memo, args.node_names_json);
  if (memo.policy != ws.policy || !memo.facts.matches(args.pod)) {
    // Another pod (or policy): nothing judged before holds.
    memo.policy = ws.policy;
    memo.facts = PodFacts::of(args.pod);
    std::fill(memo.judged_version.begin(), memo.judged_version.end(), 0);
    std::fill(memo.scored_version.begin(), memo.scored_version.end(), 0);
  }
  if (memo.judged_version.size() < nodes.version.size()) {
    memo.judged_version.resize(nodes.version.size(), 0);
    memo.verdict.resize(nodes.version.size());
    memo.reason_json.resize(nodes.version.size());
  }
  ws.stale_slots.clear();
  ws.inputs.clear();
  for (uint32_t slot : ws.slots) {
    if (slot == NodeMemo::kNoSlot || memo.judged_version[slot] == nodes.version[slot]) continue;
    memo.judged_version[slot] = nodes.version[slot];  // also once only for a name sent twice
    ws.stale_slots.push_back(slot);
    ws.inputs.push_back({&nodes.node[slot]->view(), &nodes.used[slot]});
  }
  if (ws.stale_slots.empty()) return;
  ws.policy->filter(args.pod, ws.inputs, ws.verdicts);
  for (size_t k = 0; k < ws.stale_slots.size(); ++k) {
    const uint32_t slot = ws.stale_slots[k];
    std::swap(memo.verdict[slot], ws.verdicts[k]);  // swapped, not copied: each keeps a reason buffer
    memo.reason_json[slot].clear();
    if (!memo.verdict[slot].passed()) append_json_string(memo.reason_json[slot], memo.verdict[slot].reason);
  }
}

void ExtenderService::score_names(Workspace& ws, const PodRequest& pod) const {
  VerdictMemo& memo = ws.verdict_memo;  // judge_names has reset it for another pod or policy
  const NodeMemo& nodes = ws.node_memo;
  const Policy& policy = *ws.policy;
  const size_t per_slot = policy.scorer_count();
  if (memo.scored_version.size() < nodes.version.size()) {
    memo.scored_version.resize(nodes.version.size(), 0);
    memo.scored_live.resize(nodes.version.size());
    memo.combined.resize(nodes.version.size());
  }
  memo.raw_scores.resize(memo.scored_version.size() * per_slot);
  // Live utilisation (with --prometheus-url) is part of a node's state for gpuIdle: a change scores
  // the node again.
  const size_t count = ws.scored_slots.size();
  if (parts_.utilization) {
    ws.scored_live.resize(count);
    const auto now = GpuUtilizationSource::Clock::now();
    for (size_t k = 0; k < count; ++k)
      ws.scored_live[k] = parts_.utilization->fresh(nodes.node[ws.scored_slots[k]]->view().name, now);
  }
  const auto live = [&](size_t k) { return parts_.utilization ? ws.scored_live[k] : std::nullopt; };
  ws.stale_inputs.clear();
  ws.stale_slots.clear();
  for (size_t k = 0; k < count; ++k) {
    const uint32_t slot = ws.scored_slots[k];
    if (memo.scored_version[slot] == nodes.version[slot] && memo.scored_live[slot] == live(k)) continue;
    memo.scored_version[slot] = nodes.version[slot];  // also once only for a name sent twice
    memo.scored_live[slot] = live(k);
    ws.stale_slots.push_back(slot);
    NodeInput& input = ws.stale_inputs.emplace_back(&nodes.node[slot]->view(), &nodes.used[slot]);
    input.live_gpu_utilization = live(k);
  }
  const bool alone = policy.scores_nodes_alone(pod);
  if (!ws.stale_inputs.empty()) {
    ws.stale_raw.assign(ws.stale_inputs.size() * per_slot, 0.0);
    policy.score_alone(pod, ws.stale_inputs, ws.stale_raw, ws.score_scratch);
    for (size_t k = 0; k < ws.stale_slots.size(); ++k) {
      const std::span<const double> raw(ws.stale_raw.data() + k * per_slot, per_slot);
      const uint32_t slot = ws.stale_slots[k];
      std::copy(raw.begin(), raw.end(), memo.raw_scores.begin() + static_cast<std::ptrdiff_t>(slot * per_slot));
      if (alone) memo.combined[slot] = policy.combine(pod, raw);
    }
  }
  ScoreSheet& sheet = ws.sheet;
  if (alone) {
    // Every scorer that applies scores a node alone: the kept combined scores are the sheet's, and
    // only the scaling (which ranks the nodes together) is done again. sheet.columns are not filled.
    sheet.combined.resize(count);
    for (size_t k = 0; k < count; ++k) sheet.combined[k] = memo.combined[ws.scored_slots[k]];
    policy.scale(sheet.combined, sheet.final, sheet.order);
    return;
  }
  // A scorer ranks the nodes against one another (resourcePacking): score them all, with the kept
  // raw scores of the others.
  ws.scored_inputs.clear();
  ws.alone.resize(count * per_slot);
  for (size_t k = 0; k < count; ++k) {
    const uint32_t slot = ws.scored_slots[k];
    NodeInput& input = ws.scored_inputs.emplace_back(&nodes.node[slot]->view(), &nodes.used[slot]);
    input.live_gpu_utilization = live(k);
    std::copy_n(memo.raw_scores.begin() + static_cast<std::ptrdiff_t>(slot * per_slot), per_slot,
                ws.alone.begin() + static_cast<std::ptrdiff_t>(k * per_slot));
  }
  policy.score(pod, ws.scored_inputs, sheet, ws.alone);
}

void ExtenderService::add_live_utilization(std::vector<NodeInput>& inputs) const {
  if (!parts_.utilization) return;
  const auto now = GpuUtilizationSource::Clock::now();
  for (NodeInput& input : inputs) input.live_gpu_utilization = parts_.utilization->fresh(input.node->name, now);
}

int ExtenderService::filter(Workspace& ws, VerbSummary& summary) const {
  const ExtenderArgs& args = decode_args(ws, summary, true);
  if (!args.full_mode && !parts_.cluster) {
    // ExtenderFilterResult has an Error field, and the scheduler logs it (it drops non-200 bodies).
    encode_filter_error(kNoNodeCache, ws.answer);
    summary.error = std::string(kNoNodeCache);
    summary.error_cause = "no_node_cache";
    return 200;
  }
  const size_t count = args.node_names.size();
  ws.verdict_of.resize(count);
  if (args.full_mode) {
    gather(ws, args);
    ws.policy->filter(args.pod, ws.inputs, ws.verdicts);
    for (size_t i = 0; i < count; ++i) ws.verdict_of[i] = &ws.verdicts[i];
  } else {
    // Known nodes answer from the memo, reasons encoded already; names the cache lacks get a verdict
    // of this request's own (ws.verdicts and ws.reason_json, sized first: the answer points into them).
    judge_names(ws, args);
    ws.encoded.resize(count);
    const size_t unknown = static_cast<size_t>(std::count(ws.slots.begin(), ws.slots.end(), NodeMemo::kNoSlot));
    ws.verdicts.resize(unknown);
    if (ws.reason_json.size() < unknown) ws.reason_json.resize(unknown);
    for (size_t i = 0, k = 0; i < count; ++i) {
      const uint32_t slot = ws.slots[i];
      if (slot != NodeMemo::kNoSlot) {
        const NodeVerdict& v = ws.verdict_memo.verdict[slot];
        ws.verdict_of[i] = &v;
        ws.encoded[i] = {v.fit, ws.verdict_memo.reason_json[slot]};
        continue;
      }
      NodeVerdict& v = ws.verdicts[k];
      v = {Fit::kResolvable,
           "node " + std::string(args.node_names[i]) +
               " is not in the extender's node cache (just added, or the cache is not synced yet)",
           "nodeCache"};
      std::string& json = ws.reason_json[k++];
      json.clear();
      append_json_string(json, v.reason);
      ws.verdict_of[i] = &v;
      ws.encoded[i] = {v.fit, json};
    }
  }
  ws.passing_slots.clear();
  for (size_t i = 0; i < count; ++i) {
    const NodeVerdict& v = *ws.verdict_of[i];
    if (v.passed()) {
      ++summary.nodes_out;
      if (!args.full_mode) ws.passing_slots.push_back(ws.slots[i]);
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
  if (args.full_mode) {
    encode_filter_result(args, ws.verdicts, ws.answer);  // reasons escaped there
  } else {
    const ByteRange names = encode_filter_result(args, ws.encoded, ws.answer);
    // The list /prioritize will be sent (kube-scheduler passes on the answer's names, in order).
    ws.node_memo.remember(std::string_view(ws.answer).substr(names.begin, names.end - names.begin), ws.passing_slots);
  }
  if (summary.nodes_out > 0) tracker_.expect_bind(args.pod.uid);  // one node passing: no /prioritize comes
  return 200;
}

int ExtenderService::prioritize(Workspace& ws, VerbSummary& summary) const {
  const ExtenderArgs& args = decode_args(ws, summary, true);
  // HostPriorityList has no Error field: a request that cannot be scored is answered with a status
  // (the scheduler ignores a failed prioritize and keeps its own scores).
  if (!args.full_mode && !parts_.cluster) return fail(ws, 503, kNoNodeCache, summary);
  // Only nodes that pass the filter are scored, together, as the scheduler sends them after /filter;
  // a node that fails it scores 0 (this matters to an extender registered with prioritizeVerb alone,
  // which is sent nodes its filter would refuse). scored[i]: name i's place among the scored inputs.
  std::vector<size_t>& scored = ws.input_index;
  ws.scored_inputs.clear();
  if (args.full_mode) {
    gather(ws, args);
    ws.policy->filter(args.pod, ws.inputs, ws.verdicts);
    for (size_t i = 0; i < ws.inputs.size(); ++i) {
      scored[i] = ws.verdicts[i].passed() ? ws.scored_inputs.size() : kNotCached;
      if (ws.verdicts[i].passed()) ws.scored_inputs.push_back(ws.inputs[i]);
    }
    add_live_utilization(ws.scored_inputs);
    ws.policy->score(args.pod, ws.scored_inputs, ws.sheet);
  } else {
    judge_names(ws, args);
    scored.assign(args.node_names.size(), kNotCached);  // names the cache lacks score 0
    ws.scored_slots.clear();
    for (size_t i = 0; i < scored.size(); ++i) {
      const uint32_t slot = ws.slots[i];
      if (slot == NodeMemo::kNoSlot || !ws.verdict_memo.verdict[slot].passed()) continue;
      scored[i] = ws.scored_slots.size();
      ws.scored_slots.push_back(slot);
    }
    score_names(ws, args.pod);
  }
  ws.scores.assign(args.node_names.size(), 0);
  for (size_t i = 0; i < ws.scores.size(); ++i)
    if (scored[i] != kNotCached) ws.scores[i] = ws.sheet.final[scored[i]];
  encode_host_priorities(args.node_names, ws.scores, ws.answer, args.names_verbatim);
  summary.nodes_out = args.node_names.size();
  summary.top_scores = describe_top_scores(args, ws.scores);
  if (!args.node_names.empty()) tracker_.expect_bind(args.pod.uid);
  return 200;
}

int ExtenderService::bind(Workspace& ws, VerbSummary& summary) const {
  const BindingArgs args = ws.decoder.decode_binding_args(ws.body);
  summary.pod = args.pod_namespace + "/" + args.pod_name;
  summary.nodes_in = 1;
  const std::string error = bind_pod(args, summary);
  if (error.empty()) {
    summary.nodes_out = 1;
  } else {
    summary.error = error;
    summary.error_cause = "bind_" + summary.bind_result;  // no_api, refused, failed
  }
  encode_error_object(error, ws.answer);
  return 200;
}

namespace {
// Why pod `pod` may not be bound to args.node by this extender, or "" (also when it is bound there
// already: a retried /bind whose first answer was lost).
std::string bind_refusal(const BindingArgs& args, const PendingPod& pod, const std::vector<std::string>& served) {
  const std::string label = args.pod_namespace + "/" + args.pod_name;
  if (pod.uid != args.pod_uid)
    return "cannot bind pod " + label + ": its UID is " + pod.uid + ", not the PodUID " + args.pod_uid +
           " of this request (the pod was deleted and re-created)";
  if (pod.ns != args.pod_namespace || pod.name != args.pod_name)
    return "cannot bind pod " + label + ": PodUID " + args.pod_uid + " belongs to pod " + pod.ns + "/" + pod.name;
  if (!pod.node_name.empty() && pod.node_name != args.node)
    return "pod " + label + " is already bound to node " + pod.node_name + ", not " + args.node;
  // The API server defaults an empty schedulerName to default-scheduler.
  const std::string scheduler = pod.scheduler_name.empty() ? "default-scheduler" : pod.scheduler_name;
  if (std::find(served.begin(), served.end(), scheduler) == served.end()) {
    std::string names;
    for (const auto& n : served) names += (names.empty() ? "" : ",") + n;
    return "cannot bind pod " + label + ": its schedulerName is " + scheduler +
           ", and this extender binds only pods of --scheduler-name " + names;
  }
  return "";
}
}  // namespace

std::string ExtenderService::bind_pod(const BindingArgs& args, VerbSummary& summary) const {
  const std::string label = args.pod_namespace + "/" + args.pod_name;
  if (!parts_.binder) {
    summary.bind_result = "no_api";
    return "cannot bind " + label + " to " + args.node +
           ": this extender has no Kubernetes API access configured; remove bindVerb from the scheduler's "
           "extender configuration or give the extender API access";
  }
  std::string refusal;
  std::optional<PendingPod> pod;
  if (args.pod_uid.empty() || args.node.empty() || args.pod_name.empty() || args.pod_namespace.empty()) {
    refusal = "cannot bind pod " + label + ": PodUID, PodName, PodNamespace and Node are all required (kube-scheduler "
              "sends them all; the UID makes sure the pod bound is the pod that was scheduled)";
  } else {
    // Who the pod is: as /filter or /prioritize showed it to this replica, or as the API server has it
    // (another replica scored it, or this one restarted since).
    if (parts_.cluster) pod = parts_.cluster->take_pending(args.pod_uid);
    if (!pod) {
      Binder::Fetched fetched = parts_.binder->fetch_pod(args.pod_namespace, args.pod_name);
      pod = std::move(fetched.pod);
      refusal = std::move(fetched.error);
    }
    if (pod) refusal = bind_refusal(args, *pod, parts_.scheduler_names);
  }
  const bool bound_already = refusal.empty() && !pod->node_name.empty();
  // Count the pod on its node before the API call, so that the next pod's /filter and /prioritize
  // (which may be waiting for this very moment) see it; undone if the bind fails. A pod sharing a GPU
  // by memory is counted on the device chosen for it, which the device plugin learns from annotations.
  const bool shares_gpu = refusal.empty() && !bound_already && pod->requests.has(ViewSchema::kSharedGpuMemory) &&
                          pod->requests.get(ViewSchema::kSharedGpuMemory) > 0;
  Binder::Annotations device;
  int shared_gpu = -1;
  std::string error;
  if (shares_gpu && !parts_.cluster)
    error = "cannot bind pod " + label + ": sharing a GPU needs the extender's cluster view (Kubernetes API access)";
  else if (shares_gpu) error = assume_on_shared_gpu(args, *pod, device, shared_gpu);
  else if (refusal.empty() && !bound_already && parts_.cluster)
    parts_.cluster->assume_pod(args.pod_uid, args.node, pod->requests);
  tracker_.bind_arrived(args.pod_uid);
  if (!refusal.empty() || bound_already) {
    summary.bind_result = refusal.empty() ? "bound" : "refused";
    return refusal;
  }
  if (error.empty() && !device.empty()) error = parts_.binder->annotate(args.pod_namespace, args.pod_name, args.pod_uid, device);
  const bool annotated = error.empty() && !device.empty();
  if (error.empty()) error = parts_.binder->bind(args);
  summary.bind_result = error.empty() ? "bound" : "failed";
  if (!error.empty() && parts_.cluster) parts_.cluster->release_assumed(args.pod_uid);
  if (!error.empty() && annotated) withdraw_shared_gpu(args);
  if (shares_gpu && error.empty()) {
    summary.shared_gpu_device = shared_gpu;
    summary.detail = "GPU " + std::to_string(shared_gpu) + " of " + args.node;
  }
  return error;
}

namespace {
// For the request log of /preempt: on a kept node, the GPU the pod sharing one would take once the
// victims are gone, and which of them free it ("share-a: GPU 1 freed by uid-a,uid-b; ").
std::string shared_gpu_freed_by(const PodRequest& pod, std::string_view node, const NodeInput& after,
                                const std::vector<std::pair<std::string_view, ResourceAmounts>>& freed) {
  const std::optional<SharedGpus> gpus = shared_gpus(after);
  if (!gpus) return "";
  const int device = choose_shared_gpu(*gpus, shared_gpu_units_wanted(pod), pod.placement);
  if (device < 0) return "";
  std::string victims;
  const size_t slot = shared_gpu_device_slot(static_cast<size_t>(device));
  for (const auto& [uid, frees] : freed)
    if (frees.has(slot) && frees.get(slot) > 0) victims += (victims.empty() ? "" : ",") + std::string(uid);
  return std::string(node) + ": GPU " + std::to_string(device) + " freed by " + (victims.empty() ? "none" : victims) +
         "; ";
}
}  // namespace

int ExtenderService::preempt(Workspace& ws, VerbSummary& summary) const {
  if (!parts_.cluster) {
    // ExtenderPreemptionResult has no Error field: an Error in a 200 would be dropped and read as
    // "no candidates". A non-200 status fails the preemption attempt visibly instead.
    return fail(ws, 503,
                "preemption needs the extender's node cache and pod view, which need Kubernetes API access; "
                "remove preemptVerb from the scheduler's extender configuration or give the extender API access",
                summary);
  }
  const PreemptionArgs& args = ws.decoder.decode_preemption_args(ws.body, ws.policy->schema());
  summary.pod = pod_label(args.pod);
  summary.nodes_in = args.candidates.size();
  std::vector<std::string_view> names;
  for (const auto& c : args.candidates) names.push_back(c.node);
  parts_.cluster->find_nodes(names, ws.cached_nodes);

  std::vector<bool> keep(args.candidates.size(), false);
  std::vector<NodeVerdict> verdict;
  for (size_t i = 0; i < args.candidates.size(); ++i) {
    const PreemptionCandidate& c = args.candidates[i];
    // A node returned with no victims is an error in the scheduler; an unknown node cannot be judged.
    if (c.victims.empty() || !ws.cached_nodes[i]) continue;
    // Usage on the node once the victims are gone. A victim the pod view does not know frees nothing
    // here: the node is kept only if the pod fits without counting on it.
    std::optional<ResourceAmounts> used = parts_.usage->used_on(c.node);
    const NodeInput input{&ws.cached_nodes[i]->view(), used};
    std::vector<std::pair<std::string_view, ResourceAmounts>> freed;  // victim UID, what it frees
    if (used) {
      for (const auto& victim : c.victims) {
        std::optional<ResourceAmounts> frees = victim.requests;
        if (!frees) {
          auto known = parts_.cluster->pod_usage(victim.uid);
          if (known && known->first == c.node) frees = known->second;
        }
        if (!frees) continue;
        used->subtract(*frees);
        if (args.pod.wants_shared_gpu()) freed.emplace_back(victim.uid, *frees);  // for the log line below
      }
    }
    ws.policy->filter(args.pod, std::span<const NodeInput>(&input, 1), verdict);
    keep[i] = verdict[0].passed();
    if (keep[i] && args.pod.wants_shared_gpu()) summary.detail += shared_gpu_freed_by(args.pod, c.node, input, freed);
  }
  summary.nodes_out = static_cast<size_t>(std::count(keep.begin(), keep.end(), true));
  encode_preemption_result(args, keep, ws.answer);
  return 200;
}

}  // namespace gpu_extender

namespace gpu_extender {

// POST /explain: the ExtenderArgs of /filter, answered with every node's verdict and scores, best first.
int ExtenderService::explain(Workspace& ws, VerbSummary& summary) const {
  const ExtenderArgs& args = decode_args(ws, summary, false);
  if (!gather(ws, args)) return fail(ws, 503, kNoNodeCache, summary);
  add_live_utilization(ws.inputs);
  Explanation e = gpu_extender::explain(*ws.policy, args.pod, ws.inputs);
  if (parts_.utilization) {
    // Where gpuIdle's utilisation came from: Prometheus' value, or since when it is stale.
    const auto now = GpuUtilizationSource::Clock::now();
    for (NodeExplanation& n : e.nodes) {
      const GpuUtilizationSource::Reading r = parts_.utilization->reading(n.node, now);
      std::string value = "none";
      if (r.fresh) value = std::to_string(*r.fresh);
      else if (r.last) value = "stale since " + format_utc(r.seen);
      n.facts.push_back({"gpuUtilization", value, parts_.utilization->describe()});
    }
  }
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    if (ws.input_index[i] != kNotCached) continue;
    NodeExplanation unknown;
    unknown.node = std::string(args.node_names[i]);
    unknown.verdict = {Fit::kResolvable, "node is not in the extender's node cache", "nodeCache"};
    e.nodes.push_back(std::move(unknown));
  }
  ws.answer = render_explanation_json(e);
  summary.nodes_out = e.nodes.size();
  return 200;
}

}  // namespace gpu_extender

namespace gpu_extender {

namespace {
bool same_schema(const ViewSchema& a, const ViewSchema& b) {
  if (a.resources.size() != b.resources.size()) return false;
  for (size_t i = 0; i < a.resources.size(); ++i)
    if (a.resources.name(i) != b.resources.name(i)) return false;
  return a.mig_profiles() == b.mig_profiles() && a.node_gpu_model_labels == b.node_gpu_model_labels && a.node_gpu_memory_labels == b.node_gpu_memory_labels &&
         a.node_gpu_count_labels == b.node_gpu_count_labels && a.node_gpu_family_labels == b.node_gpu_family_labels &&
         a.node_gpu_replicas_labels == b.node_gpu_replicas_labels &&
         a.pod_gpu_family_annotation == b.pod_gpu_family_annotation &&
         a.pod_placement_annotation == b.pod_placement_annotation &&
         a.node_gpu_utilization_annotation == b.node_gpu_utilization_annotation &&
         a.pod_gpu_model_annotation == b.pod_gpu_model_annotation &&
         a.pod_gpu_memory_annotation == b.pod_gpu_memory_annotation;
}
}  // namespace

std::string ExtenderService::replace_policy(std::shared_ptr<const Policy> next) const {
  if (!same_schema(policy_.load()->schema(), next->schema()))
    return "the new policy changes resources, labels or annotations; those need a restart (filters, scorers and "
           "weights reload live)";
  policy_.store(std::move(next));
  return "";
}

}  // namespace gpu_extender
