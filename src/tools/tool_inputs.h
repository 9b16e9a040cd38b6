#pragma once
// What explain and simulate share: their flags, and loading the policy, nodes, pods and usage from
// files, with errors that name the file and the field.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpu_extender/policy/policy.h"
#include "gpu_extender/usage/usage_source.h"
#include "gpu_extender/wire/wire.h"

namespace gpu_extender::tools {

struct Flags {
  std::map<std::string, std::string> values;
  std::string get(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? "" : it->second;
  }
};

// Parses "--name value" / "--name=value" for the `known` names; throws std::runtime_error on others.
// `formats`: the values --format may take (each tool says which it renders without one).
Flags parse_flags(const std::vector<std::string>& args, const std::set<std::string>& known,
                  const std::vector<std::string>& formats = {"table", "json"});

std::shared_ptr<const Policy> load_policy(const Flags& flags);

// A file's JSON and the decoder its views point into: both must outlive what was decoded from them.
struct Document {
  std::string json;
  WireDecoder decoder;
};

std::vector<NodeView> load_nodes(const std::string& path, const ViewSchema& schema, Document& doc);
std::vector<PodRequest> load_pods(const std::string& path, const ViewSchema& schema, Document& doc);
PodRequest load_pod(const std::string& path, const ViewSchema& schema, Document& doc);
// What is in use on each node, from a pods snapshot; nullopt without --pods-snapshot (unknown).
std::optional<UsageByNode> load_usage(const Flags& flags, const ViewSchema& schema);

// True when the arguments ask for help (--help or -h anywhere).
bool wants_help(const std::vector<std::string>& args);

// One pod, the nodes and what is in use on them, read from a live cluster: GET the pod, list the
// nodes, list the pods that are not finished (as the extender's own watch counts them).
struct LiveCluster {
  Document pod_doc, nodes_doc;
  PodRequest pod;
  std::vector<NodeView> nodes;
  UsageByNode usage;
};
// `pod_ref` is NAMESPACE/NAME (or NAME in namespace default). Throws std::runtime_error saying which
// call failed and why (403: the RBAC the kubeconfig's user lacks).
void load_live_cluster(const std::string& kubeconfig, const std::string& pod_ref, const ViewSchema& schema,
                       LiveCluster& out);

}  // namespace gpu_extender::tools
