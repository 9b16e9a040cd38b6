#include <algorithm>

#include "gpu_extender/extender_service.h"
#include "gpu_extender/wire.h"
#include "gpu_extender/wire_encode.h"

namespace gpu_extender {
namespace {

// Per-thread state reused across requests: the parser's buffers and the per-node vectors.
struct Scratch {
  WireDecoder decoder;
  std::vector<NodeInput> inputs;
  std::vector<NodeVerdict> verdicts;
  ScoreSheet sheet;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

constexpr std::string_view kNoNodeCache =
    "NodeNames mode (nodeCacheCapable: true) needs the extender's own node cache, which this extender does "
    "not have: configure the scheduler with nodeCacheCapable: false so that it sends full Node objects";

Reply error_reply(int status, std::string_view message, VerbSummary& summary) {
  Reply reply{status, {}};
  encode_error_object(message, reply.body);
  summary.error = std::string(message);
  return reply;
}

std::string pod_label(const PodRequest& pod) {
  return std::string(pod.ns) + "/" + std::string(pod.name);
}

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

}  // namespace

ExtenderService::ExtenderService(std::shared_ptr<const Policy> policy, std::shared_ptr<const UsageSource> usage)
    : policy_(std::move(policy)), usage_(std::move(usage)) {}

Reply ExtenderService::filter(const std::string& body, VerbSummary& summary) const {
  Scratch& s = scratch();
  try {
    const ExtenderArgs& args = s.decoder.decode_extender_args(body, policy_->schema());
    summary.pod = pod_label(args.pod);
    summary.nodes_in = args.node_names.size();
    Reply reply;
    if (!args.full_mode) {
      encode_filter_error(kNoNodeCache, reply.body);
      summary.error = std::string(kNoNodeCache);
      return reply;
    }
    collect_inputs(args, *usage_, s.inputs);
    policy_->filter(args.pod, s.inputs, s.verdicts);
    summary.nodes_out = static_cast<size_t>(
        std::count_if(s.verdicts.begin(), s.verdicts.end(), [](const NodeVerdict& v) { return v.passed(); }));
    encode_filter_result(args, s.verdicts, reply.body);
    return reply;
  } catch (const DecodeError& e) {
    return error_reply(400, e.what(), summary);
  }
}

Reply ExtenderService::prioritize(const std::string& body, VerbSummary& summary) const {
  Scratch& s = scratch();
  try {
    const ExtenderArgs& args = s.decoder.decode_extender_args(body, policy_->schema());
    summary.pod = pod_label(args.pod);
    summary.nodes_in = args.node_names.size();
    // HostPriorityList has no Error field: a request that cannot be scored is answered with a status
    // (the scheduler ignores a failed prioritize and keeps its own scores).
    if (!args.full_mode) return error_reply(503, kNoNodeCache, summary);
    collect_inputs(args, *usage_, s.inputs);
    policy_->score(args.pod, s.inputs, s.sheet);
    Reply reply;
    encode_host_priorities(args.node_names, s.sheet.final, reply.body);
    summary.nodes_out = args.node_names.size();
    summary.top_scores = describe_top_scores(args, s.sheet.final);
    return reply;
  } catch (const DecodeError& e) {
    return error_reply(400, e.what(), summary);
  }
}

Reply ExtenderService::bind(const std::string& body, VerbSummary& summary) const {
  try {
    const BindingArgs args = scratch().decoder.decode_binding_args(body);
    summary.pod = args.pod_namespace + "/" + args.pod_name;
    summary.nodes_in = 1;
    Reply reply;
    const std::string error = "cannot bind " + summary.pod + " to " + args.node +
                              ": this extender has no Kubernetes API access configured; remove bindVerb from "
                              "the scheduler's extender configuration or give the extender API access";
    encode_error_object(error, reply.body);
    summary.error = error;
    return reply;
  } catch (const DecodeError& e) {
    return error_reply(400, e.what(), summary);
  }
}

}  // namespace gpu_extender
