#include <algorithm>
#include <thread>

#include "gpu_extender/extender_service.h"
#include "gpu_extender/wire.h"
#include "gpu_extender/wire_encode.h"

namespace gpu_extender {
namespace {

constexpr std::string_view kNoNodeCache =
    "NodeNames mode (nodeCacheCapable: true) needs the extender's own node cache, which this extender does "
    "not have: configure the scheduler with nodeCacheCapable: false so that it sends full Node objects";

int fail(Workspace& ws, int status, std::string_view message, VerbSummary& summary) {
  ws.answer.clear();
  encode_error_object(message, ws.answer);
  summary.error = std::string(message);
  return status;
}

std::string pod_label(const PodRequest& pod) { return std::string(pod.ns) + "/" + std::string(pod.name); }

void collect_inputs(const ExtenderArgs& args, const UsageSource& usage, std::vector<NodeInput>& inputs) {
  inputs.clear();
  inputs.reserve(args.nodes.size());
  for (const NodeView& node : args.nodes) inputs.push_back({&node, usage.used_on(node.name)});
}

std::string describe_top_scores(const ExtenderArgs& args, const std::vector<int64_t>& scores) {
  std::vector<size_t> order(scores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const size_t top = std::min<size_t>(3, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::string out;
  for (size_t k = 0; k < top; ++k) {
    if (k) out.push_back(' ');
    out += std::string(args.node_names[order[k]]) + "=" + std::to_string(scores[order[k]]);
  }
  return out;
}

size_t idle_workspaces_to_keep() { return std::max(2U, std::thread::hardware_concurrency()); }

}  // namespace

ExtenderService::ExtenderService(std::shared_ptr<const Policy> policy, std::shared_ptr<const UsageSource> usage)
    : policy_(std::move(policy)), usage_(std::move(usage)), workspaces_(idle_workspaces_to_keep()) {}

int ExtenderService::handle(Verb verb, Workspace& ws, VerbSummary& summary) const {
  ws.answer.clear();
  try {
    switch (verb) {
      case Verb::kFilter: return filter(ws, summary);
      case Verb::kPrioritize: return prioritize(ws, summary);
      case Verb::kBind: return bind(ws, summary);
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

int ExtenderService::filter(Workspace& ws, VerbSummary& summary) const {
  const ExtenderArgs& args = ws.decoder.decode_extender_args(ws.body, policy_->schema());
  summary.pod = pod_label(args.pod);
  summary.nodes_in = args.node_names.size();
  if (!args.full_mode) {
    // ExtenderFilterResult has an Error field, and the scheduler logs it (it drops non-200 bodies).
    encode_filter_error(kNoNodeCache, ws.answer);
    summary.error = std::string(kNoNodeCache);
    return 200;
  }
  collect_inputs(args, *usage_, ws.inputs);
  policy_->filter(args.pod, ws.inputs, ws.verdicts);
  summary.nodes_out = static_cast<size_t>(
      std::count_if(ws.verdicts.begin(), ws.verdicts.end(), [](const NodeVerdict& v) { return v.passed(); }));
  encode_filter_result(args, ws.verdicts, ws.answer);
  return 200;
}

int ExtenderService::prioritize(Workspace& ws, VerbSummary& summary) const {
  const ExtenderArgs& args = ws.decoder.decode_extender_args(ws.body, policy_->schema());
  summary.pod = pod_label(args.pod);
  summary.nodes_in = args.node_names.size();
  // HostPriorityList has no Error field: a request that cannot be scored is answered with a status
  // (the scheduler ignores a failed prioritize and keeps its own scores).
  if (!args.full_mode) return fail(ws, 503, kNoNodeCache, summary);
  collect_inputs(args, *usage_, ws.inputs);
  policy_->score(args.pod, ws.inputs, ws.sheet);
  encode_host_priorities(args.node_names, ws.sheet.final, ws.answer);
  summary.nodes_out = args.node_names.size();
  summary.top_scores = describe_top_scores(args, ws.sheet.final);
  return 200;
}

int ExtenderService::bind(Workspace& ws, VerbSummary& summary) const {
  const BindingArgs args = ws.decoder.decode_binding_args(ws.body);
  summary.pod = args.pod_namespace + "/" + args.pod_name;
  summary.nodes_in = 1;
  const std::string error = "cannot bind " + summary.pod + " to " + args.node +
                            ": this extender has no Kubernetes API access configured; remove bindVerb from "
                            "the scheduler's extender configuration or give the extender API access";
  encode_error_object(error, ws.answer);
  summary.error = error;
  return 200;
}

}  // namespace gpu_extender
