// Choosing room for a pod group by preemption (group_preemption.h) over a full EKS fleet: the time of one
// plan_group_preemption call, median of many. The preemptor makes one such call per waiting group every
// 5 s, on its own thread, over a snapshot of the view.
//   build/bench/group_preemption_bench [NODES] [PODS_PER_NODE] [RUNS]
// Nodes: 8 GPUs each, 40 per layer-3 block, 10 blocks per layer-2; every node full, with PODS_PER_NODE
// bound pods (8 / PODS_PER_NODE GPUs each) of priorities 0..999, so every block is a candidate and every
// node's victims are reprieved one by one.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "gpu_extender/policy/group_preemption.h"

using namespace gpu_extender;

int main(int argc, char** argv) {
  const size_t node_count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 5000;
  const int per_node = argc > 2 ? std::max(1, std::min(8, std::atoi(argv[2]))) : 4;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 9;
  const auto policy = Policy::build(default_policy_config());
  std::deque<std::string> strings;
  std::vector<NodeView> nodes(node_count);
  std::vector<ResourceAmounts> used(node_count);
  std::vector<PreemptionVictim> pods;
  std::mt19937_64 rng(1);
  const int64_t gpus_each = 8 / per_node;
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
    for (int k = 0; k < per_node; ++k) {
      PreemptionVictim& v = pods.emplace_back();
      v.name = "pod-" + std::to_string(i) + "-" + std::to_string(k);
      v.uid = "uid-" + v.name;
      v.ns = "batch";
      v.node = n.name;
      v.requests.set(ViewSchema::kGpuResource, gpus_each * 1000);
      v.priority = static_cast<int32_t>(rng() % 1000);
      used[i].add(ViewSchema::kGpuResource, gpus_each * 1000);
    }
  }
  std::vector<NodeInput> inputs;
  for (size_t i = 0; i < node_count; ++i) inputs.emplace_back(&nodes[i], &used[i]);
  std::printf("%zu nodes, %zu bound pods\n%-44s %10s %10s %8s\n", node_count, pods.size(), "group", "p50 ms", "max ms",
              "victims");
  struct Case {
    int members;
    const char* level;
  };
  for (const Case& c : {Case{16, "topology.k8s.aws/network-node-layer-3"}, Case{64, "topology.k8s.aws/network-node-layer-2"},
                        Case{4, "topology.k8s.aws/network-node-layer-3"}}) {
    PodRequest pod;
    pod.ns = "bench";
    pod.name = "worker";
    pod.requests.set(ViewSchema::kGpuResource, 8000);
    pod.gpu_model = "H100";
    pod.group.name = "job";
    const std::string size = std::to_string(c.members);
    pod.group.size = size;
    pod.group.required_topology = c.level;
    const auto spec = group_spec_of(pod, policy->schema());
    if (!spec || !spec->invalid_reason.empty()) return 1;
    GroupPreemptionRequest r;
    r.policy = policy.get();
    r.spec = &*spec;
    r.member = &pod;
    r.priority = 1000;
    r.needed = c.members;
    r.nodes = inputs;
    r.pods = pods;
    std::vector<double> ms;
    size_t victims = 0;
    for (int run = 0; run < runs; ++run) {
      const auto start = std::chrono::steady_clock::now();
      const GroupPreemptionPlan plan = plan_group_preemption(r);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      victims = plan.victims.size();
    }
    std::sort(ms.begin(), ms.end());
    const std::string name = std::to_string(c.members) + " x 8 GPUs, required " + std::string(c.level).substr(17);
    std::printf("%-44s %10.1f %10.1f %8zu\n", name.c_str(), ms[ms.size() / 2], ms.back(), victims);
  }
  return 0;
}
