#pragma once
// The command-line tools of the gpu-extender binary, besides serving:
//   gpu-extender explain  ...   why each node won or lost for one pod
//   gpu-extender simulate ...   place a list of pods one after another, before deploying
//   gpu-extender costs    ...   the pod deletion cost each placed pod should have, and why
//   gpu-extender probe URL      GET a probe URL (helm test, exec probes: the image has no curl)
//   kubectl-gpu_extender explain NS/POD   the binary as a kubectl plugin (kubectl_plugin.cpp)
// Each returns the process exit code; output goes to `out`, errors (naming the file and the field) to
// `err`. Thread-safe: no shared state.
#include <ostream>
#include <string>
#include <vector>

namespace gpu_extender {

int run_explain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_simulate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_costs(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_probe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_kubectl_plugin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpu_extender
