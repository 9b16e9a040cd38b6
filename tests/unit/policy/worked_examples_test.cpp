// The worked examples of the policy (the design documents' §2, docs/policy.md), end to end through the decoder and the default policy.
#include <catch2/catch.hpp>
#include <map>

#include "../test_support.h"
#include "gpu_extender/usage/usage_source.h"

using namespace gpu_extender;

namespace {

struct Outcome {
  std::map<std::string, NodeVerdict> verdicts;
  std::map<std::string, int64_t> scores;
};

Outcome evaluate(const std::string& body, const UsageSource& usage) {
  auto policy = test_support::default_policy();
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, policy->schema());
  std::vector<std::optional<ResourceAmounts>> used;
  for (const NodeView& n : args.nodes) used.push_back(usage.used_on(n.name));
  std::vector<NodeInput> inputs;
  for (size_t i = 0; i < args.nodes.size(); ++i) inputs.push_back({&args.nodes[i], used[i]});
  std::vector<NodeVerdict> verdicts;
  policy->filter(args.pod, inputs, verdicts);
  ScoreSheet sheet;
  policy->score(args.pod, inputs, sheet);
  Outcome out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    out.verdicts[std::string(args.nodes[i].name)] = verdicts[i];
    out.scores[std::string(args.nodes[i].name)] = sheet.final[i];
  }
  return out;
}

// The node the scheduler would pick among those passing the filter: highest score, then name.
std::string best_passing(const Outcome& o) {
  std::string best;
  int64_t best_score = -1;
  for (const auto& [name, verdict] : o.verdicts)
    if (verdict.passed() && o.scores.at(name) > best_score) best = name, best_score = o.scores.at(name);
  return best;
}

}  // namespace

TEST_CASE("worked example: 2 x A100 40960 MiB pod against a mixed fleet") {
  const Outcome o = evaluate(test_support::sample("filter-gpu-full.json"), *make_no_usage());
  CHECK(o.verdicts.at("a100-8g").passed());
  CHECK(o.verdicts.at("a100-2g").passed());
  CHECK(o.verdicts.at("a100-80g-4g").passed());
  CHECK(o.verdicts.at("v100-8g").reason == "gpu model V100 does not match requested A100");
  CHECK(o.verdicts.at("t4-4g").fit == Fit::kUnresolvable);
  CHECK(o.verdicts.at("a100-20g-4g").reason == "gpu memory 20480 MiB per GPU is below requested 40960 MiB");
  CHECK(o.verdicts.at("a100-1g").reason == "node has 1 GPUs; pod requests 2");
  CHECK(o.verdicts.at("a100-4g-bbb").fit == Fit::kUnresolvable);
  CHECK(o.verdicts.at("cpu-only").fit == Fit::kUnresolvable);
  // fit*7+idle*3: 2 GPUs at 50% busy = (700+150)/10 = 85; 4 idle GPUs = (560+300)/10 = 86;
  // 8 GPUs at 10% = (280+270)/10 = 55.
  CHECK(o.scores.at("a100-80g-4g") > o.scores.at("a100-2g"));
  CHECK(o.scores.at("a100-2g") > o.scores.at("a100-8g"));
  CHECK(best_passing(o) == "a100-80g-4g");
}

TEST_CASE("worked example: aaa packing and bbb exclusion, through a pods snapshot") {
  const std::string body = test_support::sample("filter-aaa-full.json");
  const auto policy = test_support::default_policy();

  // master: 5 aaa, 3 in use (a Succeeded pod on worker1 does not count). First pod goes to master.
  auto start = PodsSnapshotUsage::from_text(test_support::sample("pods-aaa-start.json"), policy->schema(), "start");
  CHECK(start->used_on("master")->get(ViewSchema::kPackedResource) == 3000);
  CHECK(start->used_on("worker1")->get(ViewSchema::kPackedResource) == 0);
  Outcome o = evaluate(body, *start);
  CHECK(o.verdicts.at("worker2").fit == Fit::kUnresolvable);
  CHECK(o.verdicts.at("worker2").rule == "excludedResources");
  CHECK(best_passing(o) == "master");

  // master and worker1 both have 4 in use: worker1 has more aaa, so it wins; worker2 still never.
  auto tied = PodsSnapshotUsage::from_text(test_support::sample("pods-aaa-tied.json"), policy->schema(), "tied");
  o = evaluate(body, *tied);
  CHECK(best_passing(o) == "worker1");
  CHECK_FALSE(o.verdicts.at("worker2").passed());
  CHECK(o.scores.at("worker1") > o.scores.at("master"));
}
