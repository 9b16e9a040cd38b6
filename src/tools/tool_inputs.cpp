#include "tool_inputs.h"

#include <stdexcept>

#include "gpu_extender/tools.h"

namespace gpu_extender::tools {

Flags parse_flags(const std::vector<std::string>& args, const std::set<std::string>& known) {
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
  if (const std::string format = flags.get("--format"); !format.empty() && format != "table" && format != "json")
    throw std::runtime_error("--format must be table or json");
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
    doc.decoder.decode_node_list(doc.json, schema, [&](const NodeView& n) { nodes.push_back(n); });
  } catch (const DecodeError& e) {
    rethrow_in(path, e);
  }
  return nodes;
}

std::vector<PodRequest> load_pods(const std::string& path, const ViewSchema& schema, Document& doc) {
  doc.json = load_object_file(path);
  std::vector<PodRequest> pods;
  try {
    doc.decoder.decode_pod_list(doc.json, schema, [&](const PodRequest& p) { pods.push_back(p); });
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

}  // namespace gpu_extender::tools
