// gpu-extender costs: the pod deletion cost each pod this extender places should have, and why, on a
// cluster described by files (or what the running extender would write, given its nodes and pods).
#include <cstdio>
#include <iomanip>
#include <unordered_map>

#include "gpu_extender/policy/deletion_cost.h"
#include "common/json_writer.h"
#include "common/name_list.h"
#include "tools.h"
#include "tool_inputs.h"

namespace gpu_extender {

namespace {
constexpr const char* kCostsUsage = R"(Usage: gpu-extender costs [flags]

The pod deletion cost (controller.kubernetes.io/pod-deletion-cost) the extender keeps with
--deletion-costs for each pod it places, and why: how full the pod's node is in what the pod uses.

  --nodes FILE            a NodeList (kubectl get nodes -o json or -o yaml)
  --pods-snapshot FILE    the pods (kubectl get pods -A -o json or -o yaml)
  --scheduler-name NAME   the scheduler whose pods get costs, comma-separated (default gpu-scheduler)
  --policy FILE           the policy (default: the embedded one)
  --format table|json     (default table)
  --help                  print this help and exit
)";

}  // namespace

int run_costs(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (tools::wants_help(args)) {
    out << kCostsUsage;
    return 0;
  }
  try {
    const tools::Flags flags =
        tools::parse_flags(args, {"--nodes", "--pods-snapshot", "--scheduler-name", "--policy", "--format"});
    if (flags.get("--nodes").empty() || flags.get("--pods-snapshot").empty())
      throw std::runtime_error("give --nodes FILE (a NodeList) and --pods-snapshot FILE (a PodList)");
    const auto policy = tools::load_policy(flags);
    const PolicyConfig& config = policy->config();
    const auto schedulers =
        split_names(flags.get("--scheduler-name").empty() ? "gpu-scheduler" : flags.get("--scheduler-name"));
    if (!schedulers) throw std::runtime_error("--scheduler-name: expected names separated by commas");
    tools::Document nodes_doc, pods_doc;
    const std::vector<NodeView> nodes = tools::load_nodes(flags.get("--nodes"), config.schema, nodes_doc);
    const std::vector<PodRequest> pods = tools::load_pods(flags.get("--pods-snapshot"), config.schema, pods_doc);
    const UsageByNode usage = tools::load_usage(flags, config.schema).value_or(UsageByNode{});
    std::unordered_map<std::string_view, const NodeView*> node_by_name;
    for (const NodeView& n : nodes) node_by_name.emplace(n.name, &n);

    const bool json = flags.get("--format") == "json";
    std::string json_out = "[";
    if (!json)
      out << std::left << std::setw(32) << "POD" << std::setw(18) << "NODE" << std::setw(8) << "COST" << std::setw(9)
          << "CURRENT" << "WHY\n";
    bool first = true;
    for (const PodRequest& p : pods) {
      if (p.node_name.empty() || p.terminated()) continue;
      const auto costed = costed_pod_of(p);
      if (!costed || !keeps_cost_of(*costed, *schedulers)) continue;
      const CostedPod& pod = *costed;
      const auto found = node_by_name.find(pod.node);
      if (found == node_by_name.end()) continue;
      const NodeView* node = found->second;
      const auto used = usage.find(pod.node);
      const auto decision = decide_deletion_cost(pod, *node, used == usage.end() ? ResourceAmounts{} : used->second, config);
      if (!decision) continue;
      char fullness[16];
      std::snprintf(fullness, sizeof fullness, "%.0f%%", decision->desired.fullness * 100);
      const std::string why = std::string(fullness) + " of " + decision->desired.resource + " in use on the node (bucket " +
                              std::to_string(decision->desired.bucket) + " of " +
                              std::to_string(config.deletion_cost.buckets) + "): " + to_string(decision->action);
      if (json) {
        json_out += first ? "" : ",";
        json_out += "{\"pod\":";
        append_json_string(json_out, pod.ns + "/" + pod.name);
        json_out += ",\"node\":";
        append_json_string(json_out, pod.node);
        json_out += ",\"cost\":" + std::to_string(decision->desired.cost) + ",\"bucket\":" +
                    std::to_string(decision->desired.bucket) + ",\"current\":";
        if (pod.current) append_json_string(json_out, *pod.current);
        else json_out += "null";
        json_out += ",\"action\":";
        append_json_string(json_out, to_string(decision->action));
        json_out += ",\"why\":";
        append_json_string(json_out, why);
        json_out += "}";
      } else {
        out << std::setw(32) << pod.ns + "/" + pod.name << std::setw(18) << pod.node << std::setw(8)
            << decision->desired.cost << std::setw(9) << pod.current.value_or("-") << why << "\n";
      }
      first = false;
    }
    if (json) out << json_out << "]\n";
    return 0;
  } catch (const std::exception& e) {
    err << "gpu-extender costs: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace gpu_extender
