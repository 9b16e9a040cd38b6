// Planning a pod group whole (group_plan.h) over a large EKS fleet: the time of one plan_group call,
// median of many, for the sizes the issue names (64 members over 5,000 nodes) and a few around it.
//   build/bench/group_plan_bench [NODES] [RUNS]
// Nodes: 8 GPUs each, 40 per layer-3 block (as bench/gen_requests.py's p5 blocks), 10 blocks per
// layer-2, a third of the nodes partly in use (1-7 GPUs), so blocks differ and members pack unevenly.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "gpu_extender/policy/group_plan.h"

using namespace gpu_extender;

int main(int argc, char** argv) {
  const size_t node_count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 5000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 50;
  const auto policy = Policy::build(default_policy_config());
  std::deque<std::string> strings;
  std::vector<NodeView> nodes(node_count);
  std::vector<ResourceAmounts> used(node_count);
  std::mt19937_64 rng(1);
  for (size_t i = 0; i < node_count; ++i) {
    NodeView& n = nodes[i];
    n.name = strings.emplace_back("p5-" + std::to_string(i));
    n.gpu_model = "H100";
    n.gpu_memory = "81559";
    n.allocatable.set(ViewSchema::kGpuResource, 8000);
    n.topology[0] = "us-east-1a";
    n.topology[1] = "nn-1";
    n.topology[2] = strings.emplace_back("nn-2-" + std::to_string(i / 400));
    n.topology[3] = strings.emplace_back("nn-3-" + std::to_string(i / 40));
    if (rng() % 3 == 0) used[i].set(ViewSchema::kGpuResource, static_cast<int64_t>(1 + rng() % 7) * 1000);
  }
  std::vector<NodeInput> inputs;
  for (size_t i = 0; i < node_count; ++i) inputs.emplace_back(&nodes[i], &used[i]);
  std::printf("%-44s %10s %10s %8s\n", "group", "p50 ms", "max ms", "planned");
  struct Case {
    int members, gpus;
    const char* constraint;  // "required" | "preferred"
    const char* level;
  };
  const Case cases[] = {{64, 8, "preferred", "topology.k8s.aws/network-node-layer-3"},
                        {64, 8, "required", "topology.k8s.aws/network-node-layer-2"},
                        {64, 1, "preferred", "topology.k8s.aws/network-node-layer-3"},
                        {16, 8, "required", "topology.k8s.aws/network-node-layer-3"},
                        {512, 8, "preferred", "topology.k8s.aws/network-node-layer-3"}};
  for (const Case& c : cases) {
    PodRequest pod;
    pod.ns = "bench";
    pod.name = "worker";
    pod.requests.set(ViewSchema::kGpuResource, c.gpus * 1000LL);
    pod.gpu_model = "H100";
    pod.group.name = "job";
    const std::string size = std::to_string(c.members);
    pod.group.size = size;
    (std::string(c.constraint) == "required" ? pod.group.required_topology : pod.group.preferred_topology) = c.level;
    const GroupSpec spec = *group_spec_of(pod, policy->schema());
    GroupPlanRequest r;
    r.policy = policy.get();
    r.spec = &spec;
    r.member = &pod;
    r.nodes = inputs;
    r.needed = c.members;
    std::vector<double> ms;
    bool planned = false;
    for (int k = 0; k < runs; ++k) {
      const auto start = std::chrono::steady_clock::now();
      const GroupPlan plan = plan_group(r);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      planned = plan.planned;
    }
    std::sort(ms.begin(), ms.end());
    char label[96];
    std::snprintf(label, sizeof label, "%d x %d GPU, %s %s", c.members, c.gpus, c.constraint, c.level + 17);
    std::printf("%-44s %10.3f %10.3f %8s\n", label, ms[ms.size() / 2], ms.back(), planned ? "yes" : "no");
  }
  std::printf("(%zu nodes, %d runs each)\n", node_count, runs);
  return 0;
}
