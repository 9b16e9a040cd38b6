// gpu-extender simulate: place pending pods one after another (filter, score, choose the best, count it
// on its node), as the scheduler would with this policy, on a cluster described by files. Groups are
// planned and held by the extender's own placement ledger.
#include <cstdio>
#include <deque>
#include <iomanip>
#include <algorithm>

#include "gpu_extender/policy/explain.h"
#include "gpu_extender/policy/gpu_share.h"
#include "gpu_extender/state/placement_ledger.h"
#include "common/json_writer.h"
#include "tools.h"
#include "tool_inputs.h"

namespace gpu_extender {

namespace {
constexpr const char* kSimulateUsage = R"(Usage: gpu-extender simulate [flags]

Places pods one after another as the scheduler would with this policy (filter, score, best node,
counted on it), on a cluster described by files (kubectl get -o json or -o yaml).

  --nodes FILE           a NodeList
  --place FILE           a PodList: the pods to place, in order
  --pods-snapshot FILE   what is in use before (kubectl get pods -A; default: nothing)
  --policy FILE          the policy (default: the embedded one)
  --format table|json    (default table)
  --help                 print this help and exit
)";
}  // namespace

int run_simulate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (tools::wants_help(args)) {
    out << kSimulateUsage;
    return 0;
  }
  try {
    const tools::Flags flags = tools::parse_flags(args, {"--nodes", "--pods-snapshot", "--place", "--policy", "--format"});
    if (flags.get("--nodes").empty() || flags.get("--place").empty())
      throw std::runtime_error("give --nodes FILE (a NodeList) and --place FILE (a PodList of pods to place)");
    const auto policy = tools::load_policy(flags);
    const ViewSchema& schema = policy->schema();
    tools::Document nodes_doc, place_doc;
    const std::vector<NodeView> nodes = tools::load_nodes(flags.get("--nodes"), schema, nodes_doc);
    const std::vector<PodRequest> pending = tools::load_pods(flags.get("--place"), schema, place_doc);
    // The cluster as the extender holds it: a view with the snapshot's usage (or nothing in use), and
    // the placement ledger over it, which plans groups, holds their room and counts every pod placed,
    // as /filter, /prioritize and /bind do (no gate: the members come one after another here).
    auto view = std::make_shared<ClusterView>();
    LedgerOptions no_gate;
    no_gate.group_gate = std::chrono::milliseconds(0);
    PlacementLedger ledger(view, no_gate);
    for (const NodeView& n : nodes) ledger.observe<stored::Nodes>(n);
    std::vector<ClusterView::BoundPod> in_use;
    for (const auto& [node, used] : tools::load_usage(flags, schema).value_or(UsageByNode{}))
      in_use.push_back({"snapshot/" + node, node, used, nullptr});
    ledger.observe_relist(in_use);

    const bool json = flags.get("--format") == "json";
    std::string json_out = "[";
    if (!json) out << std::left << std::setw(28) << "POD" << std::setw(20) << "NODE" << std::setw(7) << "SCORE" << "WHY\n";
    std::deque<ResourceAmounts> used(nodes.size());
    std::vector<NodeInput> inputs;
    for (size_t p = 0; p < pending.size(); ++p) {
      PodRequest pod = pending[p];
      // The ledger keys pods by UID; a pod written by hand may have none.
      const std::string uid = pod.uid.empty() ? "simulated/" + std::to_string(p) : std::string(pod.uid);
      pod.uid = uid;
      inputs.clear();
      for (size_t i = 0; i < nodes.size(); ++i) {
        used[i] = view->used_on(nodes[i].name).value_or(ResourceAmounts{});
        inputs.push_back({&nodes[i], &used[i]});
      }
      // A group member: the ledger's plan, made by the first member and held for the rest. On its open
      // nodes the slot held for this member is taken off before the policy judges them, as the
      // extender's /filter does; it goes to the best of them (its /prioritize ranks them first).
      const std::optional<GroupSpec> spec = group_spec_of(pod, schema);
      GroupBook::Admission a;
      if (spec) {
        a = ledger.admit(pod, *spec, *policy, [&] { return std::span<const NodeInput>(inputs); },
                         [](std::span<const std::string>) { return true; });
        for (size_t i = 0; i < nodes.size(); ++i) {  // read again: the plan just made holds its room
          used[i] = view->used_on(nodes[i].name).value_or(ResourceAmounts{});
          if (std::binary_search(a.open.begin(), a.open.end(), nodes[i].name)) used[i].subtract(pod.requests);
        }
      }
      const Explanation e = explain(*policy, pod, inputs);
      const NodeExplanation* best = best_node(e);
      std::string why;
      int shared_gpu = -1;
      ResourceAmounts held = pod.requests;
      if (spec) {
        best = nullptr;
        if (a.kind == GroupBook::Admission::Kind::kPlanned) {
          for (const NodeExplanation& n : e.nodes)
            if (!best && n.verdict.passed() && std::binary_search(a.open.begin(), a.open.end(), n.node)) best = &n;
          why = best ? a.plan : "unschedulable: " + a.plan + ", and the policy refuses those nodes";
        } else {
          why = "unschedulable: " + a.reason;
        }
      } else if (best) {
        // The pod holds what it requests; its shared GPU memory on the device /bind would choose.
        if (pod.wants_shared_gpu())
          for (size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].name == best->node) shared_gpu = assign_shared_gpu(inputs[i], pod.placement, held);
        char combined[32];
        std::snprintf(combined, sizeof combined, "%.1f", best->combined);
        why = "combined " + std::string(combined);
        if (shared_gpu >= 0) why += "; GPU " + std::to_string(shared_gpu);
        if (e.nodes.size() > 1 && e.nodes[1].verdict.passed())
          why += "; next " + e.nodes[1].node + " " + std::to_string(e.nodes[1].final_score);
      } else {
        size_t refused = 0;
        for (const auto& n : e.nodes) refused += n.verdict.passed() ? 0 : 1;
        why = "unschedulable: " + std::to_string(refused) + " node(s) refused" +
              (e.nodes.empty() ? "" : "; e.g. " + e.nodes.front().node + ": " + e.nodes.front().verdict.reason);
      }
      if (best) {  // bound: /bind's steps in the ledger
        const PendingPod bound = PendingPod::of(pod);
        ledger.reserve(bound, best->node, held);
        if (ledger.wait_at_gate(bound).ok) ledger.commit(bound);
        else ledger.roll_back(bound);
      }
      if (json) {
        if (p) json_out += ",";
        json_out += "{\"pod\":";
        append_json_string(json_out, e.pod);
        json_out += ",\"node\":";
        if (best) append_json_string(json_out, best->node);
        else json_out += "null";
        if (shared_gpu >= 0) json_out += ",\"sharedGpu\":" + std::to_string(shared_gpu);
        json_out += ",\"explanation\":" + render_explanation_json(e) + "}";
      } else {
        out << std::setw(28) << e.pod << std::setw(20) << (best ? best->node : "-") << std::setw(7)
            << (best && best->final_score >= 0 ? std::to_string(best->final_score) : "-") << why << "\n";
      }
    }
    if (json) out << json_out << "]\n";
    return 0;
  } catch (const std::exception& e) {
    err << "gpu-extender simulate: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace gpu_extender
