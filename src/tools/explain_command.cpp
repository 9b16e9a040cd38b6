// gpu-extender explain: why each node won or lost, for one pod.
#include "gpu_extender/policy/explain.h"
#include "common/file_text.h"
#include "tools.h"
#include "tool_inputs.h"

namespace gpu_extender {

namespace {
constexpr const char* kExplainUsage = R"(Usage: gpu-extender explain [flags]

Why each node passes or fails the policy for one pod, and how it scores: the server's own engine.

From the live cluster ("why is my pod pending"):
  --kubeconfig FILE      read the pod, the nodes and what is in use from the API (current-context;
                         the user needs get/list on pods and nodes)
  --pod NAMESPACE/NAME   the pod

From files (kubectl get -o json or -o yaml):
  --args FILE            an ExtenderArgs body (what kube-scheduler sent to /filter), or:
  --pod FILE             a Pod, with
  --nodes FILE           a NodeList
  --pods-snapshot FILE   what is in use: kubectl get pods -A (default with files: nothing in use;
                         with --kubeconfig it replaces the live pods)

  --policy FILE          the policy (default: the embedded one)
  --format table|json|words   (default table; words: a few sentences, then the table)
  --help                 print this help and exit
)";
}  // namespace

int run_explain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (tools::wants_help(args)) {
    out << kExplainUsage;
    return 0;
  }
  try {
    const tools::Flags flags = tools::parse_flags(
        args, {"--args", "--pod", "--nodes", "--pods-snapshot", "--policy", "--format", "--kubeconfig"},
        {"table", "json", "words"});
    const auto policy = tools::load_policy(flags);
    const ViewSchema& schema = policy->schema();
    tools::Document args_doc, pod_doc, nodes_doc;
    tools::LiveCluster live;
    PodRequest pod;
    std::vector<NodeView> nodes;
    std::optional<UsageByNode> usage;
    if (const std::string kubeconfig = flags.get("--kubeconfig"); !kubeconfig.empty()) {
      if (flags.get("--pod").empty()) throw std::runtime_error("--kubeconfig needs --pod NAMESPACE/NAME");
      tools::load_live_cluster(kubeconfig, flags.get("--pod"), schema, live);
      pod = live.pod;
      nodes = live.nodes;
      usage = live.usage;
    } else if (const std::string path = flags.get("--args"); !path.empty()) {
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
      throw std::runtime_error(
          "give --kubeconfig FILE and --pod NAMESPACE/NAME, or --args FILE (an ExtenderArgs body), or --pod FILE and "
          "--nodes FILE (see --help)");
    }
    if (std::optional<UsageByNode> snapshot = tools::load_usage(flags, schema)) usage = std::move(snapshot);
    std::vector<NodeInput> inputs;
    for (const NodeView& n : nodes) {
      const ResourceAmounts* used = nullptr;  // usage unknown without a snapshot or a cluster
      if (usage) {
        auto it = usage->find(n.name);
        used = it == usage->end() ? &kNothingInUse : &it->second;
      }
      inputs.push_back({&n, used});
    }
    const Explanation e = explain(*policy, pod, inputs);
    const std::string format = flags.get("--format");
    if (format == "json") out << render_explanation_json(e) << "\n";
    else if (format == "words") out << render_explanation_words(e) << "\n" << render_explanation_table(e);
    else out << render_explanation_table(e);
    return 0;
  } catch (const std::exception& e) {
    err << "gpu-extender explain: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace gpu_extender
