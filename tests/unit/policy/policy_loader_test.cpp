#include <catch2/catch.hpp>

#include "../test_support.h"
#include "gpu_extender/common/build_info.h"

using namespace gpu_extender;

TEST_CASE("policy: the embedded default is the shipped file and the behaviour of the design's worked examples") {
  CHECK(default_policy_text() == test_support::read_file(test_support::source_path("extender-config/policy.yaml")));
  const PolicyConfig c = default_policy_config();
  CHECK(c.schema.resources.name(ViewSchema::kGpuResource) == "nvidia.com/gpu");
  CHECK(c.schema.resources.name(ViewSchema::kPackedResource) == "custom.resource/aaa");
  CHECK(c.schema.resources.name(ViewSchema::kFirstExcludedResource) == "custom.resource/bbb");
  CHECK(c.schema.resources.name(ViewSchema::kSharedGpuMemory) == "aliyun.com/gpu-mem");
  CHECK(c.schema.resources.name(ViewSchema::kSharedGpuCount) == "aliyun.com/gpu-count");
  CHECK(c.shared_gpu_memory_unit == "GiB");
  CHECK(c.filters == std::vector<std::string>{"gpuModel", "gpuMemory", "gpuCount", "excludedResources",
                                              "packedResourceFit", "gpuShare"});
  REQUIRE(c.scorers.size() == 4);
  CHECK(c.scorers[3].name == "gpuShare");
  CHECK(c.scorers[0].name == "gpuFit");
  CHECK(c.scorers[0].weight == 7);
  CHECK(c.scorers[1].weight == 3);
  CHECK_NOTHROW(Policy::build(c));
}

TEST_CASE("policy: a file overrides key by key, in YAML or JSON") {
  const PolicyConfig yaml = parse_policy("resources:\n  excluded: [example.com/fpga, example.com/x]\n"
                                         "nodeLabels:\n  gpuModel: nvidia.com/gpu.product\n",
                                         "test.yaml");
  CHECK(yaml.schema.resources.size() == ViewSchema::kFirstExcludedResource + 2);
  CHECK(yaml.schema.resources.name(ViewSchema::kFirstExcludedResource + 1) == "example.com/x");
  CHECK(yaml.schema.node_gpu_model_labels == std::vector<std::string>{"nvidia.com/gpu.product"});
  CHECK(yaml.schema.node_gpu_memory_labels == std::vector<std::string>{"gpu.nvidia.com/memory", "nvidia.com/gpu.memory",
                                                                      "karpenter.k8s.aws/instance-gpu-memory",
                                                                      "eks.amazonaws.com/instance-gpu-memory"});
  // A list gives the order of precedence; more than four, or none, is refused.
  const PolicyConfig listed =
      parse_policy("nodeLabels:\n  gpuCount: [example.com/gpus, nvidia.com/gpu.count]\n", "test.yaml");
  CHECK(listed.schema.node_gpu_count_labels == std::vector<std::string>{"example.com/gpus", "nvidia.com/gpu.count"});
  CHECK_THROWS_WITH(parse_policy("nodeLabels:\n  gpuCount: [a, b, c, d, e, f, g]\n", "test.yaml"),
                    "test.yaml: nodeLabels.gpuCount: expected 1 to 6 label names");
  CHECK(yaml.filters.size() == 6);

  const PolicyConfig json = parse_policy(R"({"scorers":[{"name":"gpuFit","weight":1}],"filters":[]})", "p.json");
  CHECK(json.filters.empty());
  REQUIRE(json.scorers.size() == 1);
  CHECK(json.scorers[0].weight == 1);
  CHECK(json.source == "p.json");
}

TEST_CASE("policy: a file nested deeper than yaml-cpp's depth bound is an error naming the file, never a crash") {
  // yaml-cpp's parser stops at 500 levels (DepthGuard) with DeepRecursion: the policy file (and a
  // reload of it) is refused with where and why, as any file that is not YAML.
  const std::string deep = "filters: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  CHECK_THROWS_WITH(parse_policy(deep, "deep.yaml"), Catch::StartsWith("deep.yaml: not valid YAML or JSON: ") &&
                                                         Catch::Contains("nested more than"));
}

TEST_CASE("policy: errors name the file and the key") {
  CHECK_THROWS_WITH(parse_policy("filter: []", "f.yaml"), Catch::StartsWith("f.yaml: filter: unknown key"));
  CHECK_THROWS_WITH(parse_policy("nodeLabels:\n  gpuModle: x\n", "f.yaml"),
                    Catch::StartsWith("f.yaml: nodeLabels.gpuModle: unknown key"));
  CHECK_THROWS_WITH(parse_policy("scorers:\n  - name: gpuFit\n    weight: heavy\n", "f.yaml"),
                    "f.yaml: scorers[0].weight: expected a whole number");
  CHECK_THROWS_WITH(parse_policy("scorers:\n  - weight: 2\n", "f.yaml"), "f.yaml: scorers[0].name: missing");
  CHECK_THROWS_WITH(parse_policy("scorers:\n  - name: gpuFit\n    weight: -1\n", "f.yaml"),
                    "f.yaml: scorers[0].weight: must be 0..100");
  CHECK_THROWS_WITH(parse_policy("resources:\n  gpu: custom.resource/aaa\n", "f.yaml"),
                    Catch::Contains("named twice"));
  CHECK_THROWS_WITH(parse_policy("resources: [1, 2", "f.yaml"), Catch::StartsWith("f.yaml: not valid YAML or JSON"));
  CHECK_THROWS_WITH(parse_policy("resources:\n  excluded: [a, b, c, d, e, f, g]\n", "f.yaml"),
                    "f.yaml: resources.excluded: at most 6 resources");
  CHECK_THROWS_WITH(load_policy_file("/nonexistent/policy.yaml"), "/nonexistent/policy.yaml: cannot be read");
  CHECK_THROWS_WITH(parse_policy("filters: [gpuModel]\nfilters: []\n", "f.yaml"), "f.yaml: filters: duplicate key");
}

TEST_CASE("policy: unknown or repeated rule names are refused when building") {
  PolicyConfig c = parse_policy("filters: [gpuModel, gpuModels]", "f.yaml");
  CHECK_THROWS_WITH(Policy::build(c), Catch::StartsWith("f.yaml: filters: unknown filter \"gpuModels\" (known: "));
  c = parse_policy("filters: [gpuModel, gpuModel]", "f.yaml");
  CHECK_THROWS_WITH(Policy::build(c), "f.yaml: filters: \"gpuModel\" listed twice");
  c = parse_policy("scorers: [{name: fastest}]", "f.yaml");
  CHECK_THROWS_WITH(Policy::build(c), Catch::StartsWith("f.yaml: scorers: unknown scorer \"fastest\""));
}

TEST_CASE("policy: scoreBaseline is lowest or zero, and nothing else") {
  CHECK(parse_policy("scoreBaseline: zero", "s.yaml").score_baseline == ScoreBaseline::kZero);
  CHECK(parse_policy("scoreBaseline: lowest", "s.yaml").score_baseline == ScoreBaseline::kLowest);
  CHECK_THROWS_WITH(parse_policy("scoreBaseline: min", "s.yaml"),
                    "s.yaml: scoreBaseline: expected lowest or zero, not \"min\"");
}

TEST_CASE("policy: scoreScaling chooses between ordered and proportional scores") {
  CHECK(default_policy_config().score_scaling == ScoreScaling::kOrdered);
  PolicyConfig c = parse_policy("scoreScaling: proportional", "s.yaml");
  CHECK(c.score_scaling == ScoreScaling::kProportional);
  CHECK_THROWS_WITH(parse_policy("scoreScaling: linear", "s.yaml"),
                    "s.yaml: scoreScaling: expected ordered or proportional, not \"linear\"");
  // Two nodes whose GPU idleness differs by one point: ordered keeps them apart, proportional ties them.
  c.scorers = {{"gpuIdle", 1}};
  PolicyConfig ordered = c;
  ordered.score_scaling = ScoreScaling::kOrdered;
  NodeView busy = test_support::gpu_node("a", "A100", "1", 4), idler = test_support::gpu_node("b", "A100", "1", 4);
  busy.gpu_utilization = "0.32";
  idler.gpu_utilization = "0.31";
  const std::vector<NodeInput> nodes{{&busy, {}}, {&idler, {}}};
  ScoreSheet sheet;
  Policy::build(c)->score(test_support::gpu_pod(1), nodes, sheet);
  CHECK(sheet.final[0] == sheet.final[1]);
  Policy::build(ordered)->score(test_support::gpu_pod(1), nodes, sheet);
  CHECK(sheet.final[0] < sheet.final[1]);
}
