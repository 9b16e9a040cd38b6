#pragma once
// The extender verbs as functions of a request body: decode, call the policy, encode. No HTTP here,
// so tests and benchmarks call the same code the server runs.
//
// Thread-safe: any number of threads may call the verbs at once; each thread keeps its own decoder and
// buffers (thread_local), and the policy and usage source are shared read-only.
#include <memory>
#include <string>
#include <string_view>

#include "gpu_extender/policy.h"
#include "gpu_extender/usage_source.h"

namespace gpu_extender {

struct Reply {
  int status = 200;
  std::string body;  // JSON
};

// What a verb did, for the request log line (and metrics later).
struct VerbSummary {
  std::string pod;         // namespace/name
  size_t nodes_in = 0;
  size_t nodes_out = 0;    // filter: passing nodes
  std::string top_scores;  // prioritize: "node-a=10 node-b=9 node-c=7"
  std::string error;       // set when the request failed
};

class ExtenderService {
 public:
  ExtenderService(std::shared_ptr<const Policy> policy, std::shared_ptr<const UsageSource> usage);

  Reply filter(const std::string& body, VerbSummary& summary) const;
  Reply prioritize(const std::string& body, VerbSummary& summary) const;
  Reply bind(const std::string& body, VerbSummary& summary) const;

  const Policy& policy() const { return *policy_; }
  const UsageSource& usage() const { return *usage_; }

 private:
  std::shared_ptr<const Policy> policy_;
  std::shared_ptr<const UsageSource> usage_;
};

}  // namespace gpu_extender
