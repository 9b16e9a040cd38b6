#include "tool_inputs.h"

#include <algorithm>

#include <stdexcept>

#include "common/file_text.h"
#include "gpu_extender/kube/kube_config.h"
#include "tools.h"
#include "gpu_extender/kube/api_client.h"

namespace gpu_extender::tools {

Flags parse_flags(const std::vector<std::string>& args, const std::set<std::string>& known,
                  const std::vector<std::string>& formats) {
  Flags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      throw std::runtime_error(name + " needs a value");
    }
    if (!known.count(name)) throw std::runtime_error("unknown flag " + name);
    flags.values[name] = value;
  }
  if (const std::string format = flags.get("--format");
      !format.empty() && std::find(formats.begin(), formats.end(), format) == formats.end()) {
    std::string allowed;
    for (size_t i = 0; i < formats.size(); ++i) allowed += (i == 0 ? "" : i + 1 == formats.size() ? " or " : ", ") + formats[i];
    throw std::runtime_error("--format must be " + allowed);
  }
  return flags;
}

std::shared_ptr<const Policy> load_policy(const Flags& flags) {
  const std::string path = flags.get("--policy");
  return Policy::build(path.empty() ? default_policy_config() : load_policy_file(path));
}

namespace {
[[noreturn]] void rethrow_in(const std::string& path, const DecodeError& e) {
  throw std::runtime_error(path + ": " + e.what());
}
}  // namespace

std::vector<NodeView> load_nodes(const std::string& path, const ViewSchema& schema, Document& doc) {
  doc.json = load_object_file(path);
  std::vector<NodeView> nodes;
  try {
    doc.decoder.decode_list<NodeView>(doc.json, schema, [&](const NodeView& n) { nodes.push_back(n); });
  } catch (const DecodeError& e) {
    rethrow_in(path, e);
  }
  return nodes;
}

std::vector<PodRequest> load_pods(const std::string& path, const ViewSchema& schema, Document& doc) {
  doc.json = load_object_file(path);
  std::vector<PodRequest> pods;
  try {
    doc.decoder.decode_list<PodRequest>(doc.json, schema, [&](const PodRequest& p) { pods.push_back(p); });
  } catch (const DecodeError& e) {
    rethrow_in(path, e);
  }
  return pods;
}

PodRequest load_pod(const std::string& path, const ViewSchema& schema, Document& doc) {
  doc.json = load_object_file(path);
  try {
    return doc.decoder.decode_pod_object(doc.json, schema);
  } catch (const DecodeError& e) {
    rethrow_in(path, e);
  }
}

std::optional<UsageByNode> load_usage(const Flags& flags, const ViewSchema& schema) {
  const std::string path = flags.get("--pods-snapshot");
  if (path.empty()) return std::nullopt;
  return PodsSnapshotUsage::from_text(load_object_file(path), schema, path)->by_node();
}

bool wants_help(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

namespace {
// One GET of the API; its body, or an error naming the call.
std::string api_get(const kube::ApiClient& client, const std::string& path, const std::string& what) {
  const kube::ApiResponse res = client.get(path, std::chrono::seconds(60));
  if (!res.ok()) {
    std::string hint;
    if (res.status == 403) hint = " (the kubeconfig's user may not " + what + ": it needs get/list on pods and nodes)";
    if (res.status == 404) hint = " (no such object)";
    throw std::runtime_error("GET " + path + ": " + res.describe() + hint);
  }
  return res.body;
}
}  // namespace

void load_live_cluster(const std::string& kubeconfig, const std::string& pod_ref, const ViewSchema& schema,
                       LiveCluster& out) {
  const size_t slash = pod_ref.find('/');
  const std::string ns = slash == std::string::npos ? "default" : pod_ref.substr(0, slash);
  const std::string name = slash == std::string::npos ? pod_ref : pod_ref.substr(slash + 1);
  if (ns.empty() || name.empty() || name.find('/') != std::string::npos)
    throw std::runtime_error("--pod " + pod_ref + ": with --kubeconfig, --pod is NAMESPACE/NAME");
  const kube::ApiClient client(kubeconfig_endpoint(kubeconfig));
  const std::string pod_path = "/api/v1/namespaces/" + ns + "/pods/" + name;
  out.pod_doc.json = api_get(client, pod_path, "get pods");
  try {
    out.pod = out.pod_doc.decoder.decode_pod_object(out.pod_doc.json, schema);
  } catch (const DecodeError& e) {
    throw std::runtime_error("GET " + pod_path + ": " + e.what());
  }
  out.nodes_doc.json = api_get(client, "/api/v1/nodes", "list nodes");
  try {
    out.nodes_doc.decoder.decode_list<NodeView>(out.nodes_doc.json, schema, [&](const NodeView& n) { out.nodes.push_back(n); });
  } catch (const DecodeError& e) {
    throw std::runtime_error("GET /api/v1/nodes: " + std::string(e.what()));
  }
  // Pods that hold resources: bound and not finished (the snapshot counts the same way).
  const std::string pods_path = "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";
  out.usage = PodsSnapshotUsage::from_text(api_get(client, pods_path, "list pods"), schema, "GET /api/v1/pods")->by_node();
}

}  // namespace gpu_extender::tools
