// gpu-extender explain: why each node won or lost, for one pod.
#include "gpu_extender/explain.h"
#include "gpu_extender/tools.h"
#include "tool_inputs.h"

namespace gpu_extender {

int run_explain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    const tools::Flags flags =
        tools::parse_flags(args, {"--args", "--pod", "--nodes", "--pods-snapshot", "--policy", "--format"});
    const auto policy = tools::load_policy(flags);
    const ViewSchema& schema = policy->schema();
    tools::Document args_doc, pod_doc, nodes_doc;
    PodRequest pod;
    std::vector<NodeView> nodes;
    if (const std::string path = flags.get("--args"); !path.empty()) {
      args_doc.json = load_object_file(path);
      try {
        const ExtenderArgs& decoded = args_doc.decoder.decode_extender_args(args_doc.json, schema);
        if (!decoded.full_mode)
          throw std::runtime_error(path + ": NodeNames only (names mode); explain needs node objects: use --pod and --nodes");
        pod = decoded.pod;
        nodes = decoded.nodes;
      } catch (const DecodeError& e) {
        throw std::runtime_error(path + ": " + e.what());
      }
    } else if (!flags.get("--pod").empty() && !flags.get("--nodes").empty()) {
      pod = tools::load_pod(flags.get("--pod"), schema, pod_doc);
      nodes = tools::load_nodes(flags.get("--nodes"), schema, nodes_doc);
    } else {
      throw std::runtime_error("give --args FILE (an ExtenderArgs body), or --pod FILE and --nodes FILE");
    }
    const std::optional<UsageByNode> usage = tools::load_usage(flags, schema);
    std::vector<NodeInput> inputs;
    for (const NodeView& n : nodes) {
      std::optional<ResourceAmounts> used;
      if (usage) {
        auto it = usage->find(n.name);
        used = it == usage->end() ? ResourceAmounts{} : it->second;
      }
      inputs.push_back({&n, used});
    }
    const Explanation e = explain(*policy, pod, inputs);
    out << (flags.get("--format") == "json" ? render_explanation_json(e) + "\n" : render_explanation_table(e));
    return 0;
  } catch (const std::exception& e) {
    err << "gpu-extender explain: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace gpu_extender
