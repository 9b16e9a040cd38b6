// gpu-extender simulate: place pending pods one after another (filter, score, choose the best, count it
// on its node), as the scheduler would with this policy, on a cluster described by files.
#include <cstdio>
#include <deque>
#include <iomanip>
#include <map>

#include "gpu_extender/explain.h"
#include "gpu_extender/gpu_share.h"
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
    // Usage starts from the snapshot (or nothing in use) and grows with every pod placed.
    UsageByNode usage = tools::load_usage(flags, schema).value_or(UsageByNode{});

    const bool json = flags.get("--format") == "json";
    std::string json_out = "[";
    if (!json) out << std::left << std::setw(28) << "POD" << std::setw(20) << "NODE" << std::setw(7) << "SCORE" << "WHY\n";
    struct GroupSlots {
      bool planned = false;
      std::string where;
      std::deque<std::string> slots;  // planned nodes no member has taken yet
    };
    std::map<std::string, GroupSlots> groups;
    for (size_t p = 0; p < pending.size(); ++p) {
      const PodRequest& pod = pending[p];
      std::vector<NodeInput> inputs;
      for (const NodeView& n : nodes) {
        auto it = usage.find(n.name);
        inputs.push_back({&n, it == usage.end() ? &kNothingInUse : &it->second});
      }
      const Explanation e = explain(*policy, pod, inputs);
      const NodeExplanation* best = best_node(e);
      std::string why;
      int shared_gpu = -1;
      if (e.group) {
        // A group member: the first one's plan holds every member's node at once (as the extender
        // does); each member then takes the next planned node.
        best = nullptr;
        GroupSlots& group = groups[PendingPod::group_key_of(pod)];
        if (!group.planned && e.group->plan.planned) {
          group.planned = true;
          group.where = e.group->plan.domains.empty() ? std::string() : e.group->plan.domains.front();
          for (const std::string& node : e.group->plan.slots) {
            group.slots.push_back(node);
            usage[node].add(pod.requests);
          }
        }
        if (!group.slots.empty()) {
          for (const NodeExplanation& n : e.nodes)
            if (n.node == group.slots.front()) best = &n;
          group.slots.pop_front();
          why = "group plan: " + group.where;
        } else {
          why = "unschedulable: " + (e.group->error.empty() ? (group.planned ? "its group is placed already" : e.group->plan.reason)
                                                            : e.group->error);
        }
      } else if (best) {
        // The pod holds what it requests; its shared GPU memory on the device /bind would choose.
        ResourceAmounts held = pod.requests;
        if (pod.wants_shared_gpu())
          for (const NodeView& n : nodes)
            if (n.name == best->node) shared_gpu = assign_shared_gpu({&n, &usage[best->node]}, pod.placement, held);
        usage[best->node].add(held);
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
