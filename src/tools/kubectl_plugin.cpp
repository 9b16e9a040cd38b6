// kubectl gpu-extender: the binary installed as kubectl-gpu_extender (kubectl runs a plugin by its file
// name, kubectl-<name with - as _>). It answers `explain NAMESPACE/POD` from the user's own kubeconfig,
// as `gpu-extender explain --kubeconfig ... --pod ...` does, in words first and then the table, or JSON.
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools.h"
#include "tool_inputs.h"

namespace gpu_extender {
namespace {

constexpr const char* kPluginUsage = R"(Usage: kubectl gpu-extender explain NAMESPACE/POD [-o json] [--kubeconfig FILE] [--policy FILE]

Why a GPU pod (or its group) is pending, or where it would go: the extender's own policy and engine
over the pod, the nodes and what is in use, read with your kubeconfig (get/list on pods and nodes).

  -o, --output json    the whole explanation as JSON (default: in words, then every node's verdict)
  --kubeconfig FILE    default: $KUBECONFIG's first file, else ~/.kube/config
  --policy FILE        the policy to judge by (default: the one embedded in the binary, as shipped)
  -n, --namespace NS   the namespace of a POD given without one
)";

// kubectl's own rule for the kubeconfig: --kubeconfig, else the first file of $KUBECONFIG, else
// ~/.kube/config.
std::string default_kubeconfig() {
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    const std::string list = env;
    return list.substr(0, list.find(':'));
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "") + "/.kube/config";
}

}  // namespace

int run_kubectl_plugin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || tools::wants_help(args)) {
    (args.empty() ? err : out) << kPluginUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] != "explain") {
    err << "kubectl gpu-extender: unknown command " << args[0] << " (see --help)\n";
    return 2;
  }
  std::string pod, kubeconfig, ns, format = "words", policy;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= args.size()) throw std::runtime_error(std::string(flag) + " needs a value");
      return args[++i];
    };
    try {
      if (a == "-o" || a == "--output") format = value("-o");
      else if (a.rfind("--output=", 0) == 0) format = a.substr(9);
      else if (a == "--kubeconfig") kubeconfig = value("--kubeconfig");
      else if (a.rfind("--kubeconfig=", 0) == 0) kubeconfig = a.substr(13);
      else if (a == "-n" || a == "--namespace") ns = value("-n");
      else if (a == "--policy") policy = value("--policy");
      else if (!a.empty() && a[0] != '-' && pod.empty()) pod = a;
      else throw std::runtime_error("unexpected argument " + a);
    } catch (const std::exception& e) {
      err << "kubectl gpu-extender explain: " << e.what() << " (see --help)\n";
      return 2;
    }
  }
  if (format != "words" && format != "json") {
    err << "kubectl gpu-extender explain: -o takes json (or nothing, for words and the table)\n";
    return 2;
  }
  if (pod.empty()) {
    err << "kubectl gpu-extender explain: name the pod, NAMESPACE/POD (see --help)\n";
    return 2;
  }
  if (pod.find('/') == std::string::npos) pod = (ns.empty() ? "default" : ns) + "/" + pod;
  std::vector<std::string> explain{"--kubeconfig", kubeconfig.empty() ? default_kubeconfig() : kubeconfig,
                                   "--pod", pod, "--format", format == "json" ? "json" : "words"};
  if (!policy.empty()) explain.insert(explain.end(), {"--policy", policy});
  return run_explain(explain, out, err);
}

}  // namespace gpu_extender
