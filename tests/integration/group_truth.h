#pragma once
// What the API server says of pod groups at the end of a run (the truth the group tests hold the
// extender to): per group, its bound members and the blocks they are in; per node, the GPUs and CPUs
// its bound pods request. Members are named "<group>-<index>", groups "job-<n>"; a node's block is
// the character of its name given by `block_at`.
#include <map>
#include <set>
#include <string>

#include "default_plugins.h"
#include "fake_api_server.h"

namespace test_support {

struct GroupTruth {
  std::map<std::string, int> bound;                    // by group
  std::map<std::string, std::set<std::string>> blocks;  // by group
  std::map<std::string, std::string> node_of;          // by pod name, bound pods only
  std::map<std::string, int64_t> gpus_on, cpus_on;     // by node, milli
};

inline std::string group_of_member(const std::string& pod) {
  return pod.rfind("job-", 0) == 0 ? pod.substr(0, pod.rfind('-')) : "";
}

inline GroupTruth group_truth(FakeApiServer& api, size_t block_at) {
  GroupTruth t;
  for (const json& p : api.pods()) {
    const std::string node = p["spec"].value("nodeName", "");
    if (node.empty()) continue;
    const std::string name = p["metadata"]["name"];
    t.node_of[name] = node;
    t.gpus_on[node] += pod_request_milli(p, "nvidia.com/gpu");
    t.cpus_on[node] += pod_request_milli(p, "cpu");
    if (const std::string g = group_of_member(name); !g.empty()) {
      ++t.bound[g];
      t.blocks[g].insert(node.substr(block_at, 1));
    }
  }
  return t;
}

}  // namespace test_support
