#include <catch2/catch.hpp>

#include "gpu_extender/usage/usage_source.h"
#include "test_support.h"

using namespace gpu_extender;

TEST_CASE("usage: none knows nothing") {
  auto none = make_no_usage();
  CHECK_FALSE(none->used_on("any").has_value());
  CHECK(none->describe().rfind("none", 0) == 0);
}

TEST_CASE("usage: a pods snapshot sums effective requests of bound, unfinished pods") {
  const std::string list = R"({"kind":"PodList","items":[
    {"metadata":{"name":"a"},"spec":{"nodeName":"n1","containers":[{"resources":{"limits":{"nvidia.com/gpu":"2"}}}]},"status":{"phase":"Running"}},
    {"metadata":{"name":"b"},"spec":{"nodeName":"n1","containers":[{"resources":{"requests":{"nvidia.com/gpu":"1","custom.resource/aaa":"3"}}}]},"status":{"phase":"Pending"}},
    {"metadata":{"name":"done"},"spec":{"nodeName":"n1","containers":[{"resources":{"limits":{"nvidia.com/gpu":"4"}}}]},"status":{"phase":"Succeeded"}},
    {"metadata":{"name":"failed"},"spec":{"nodeName":"n2","containers":[{"resources":{"limits":{"nvidia.com/gpu":"4"}}}]},"status":{"phase":"Failed"}},
    {"metadata":{"name":"pending"},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"8"}}}]},"status":{"phase":"Pending"}}
  ]})";
  auto usage = PodsSnapshotUsage::from_text(list, test_support::default_policy()->schema(), "pods.json");
  CHECK(usage->used_on("n1")->get(ViewSchema::kGpuResource) == 3000);
  CHECK(usage->used_on("n1")->get(ViewSchema::kPackedResource) == 3000);
  CHECK(usage->used_on("n2")->get(ViewSchema::kGpuResource) == 0);  // known: nothing in use
  CHECK(usage->used_on("elsewhere").has_value());
  CHECK(usage->describe() == "pods snapshot pods.json (2 pods on 1 nodes)");
}

TEST_CASE("usage: a malformed snapshot names the file and the field") {
  const auto schema = test_support::default_policy()->schema();
  CHECK_THROWS_WITH(PodsSnapshotUsage::from_text(R"({"items":[{"spec":{"containers":[{"resources":{"requests":{"nvidia.com/gpu":"x"}}}]}}]})",
                                                 schema, "pods.json"),
                    "pods.json: items[0].spec.containers[0].resources.requests.nvidia.com/gpu: invalid quantity \"x\": "
                    "no digits");
  CHECK_THROWS_WITH(PodsSnapshotUsage::from_text(R"({"kind":"Pod"})", schema, "pods.json"),
                    Catch::StartsWith("pods.json: items: missing"));
  CHECK_THROWS_WITH(PodsSnapshotUsage::load("/nonexistent.json", schema), "/nonexistent.json: cannot be read");
}

TEST_CASE("usage: the server's --pods-snapshot takes kubectl's YAML as well as its JSON") {
  const auto schema = test_support::default_policy()->schema();
  const auto yaml = PodsSnapshotUsage::load(test_support::source_path("extender-config/examples/gpu-fleet/pods-running.yaml"), schema);
  CHECK(yaml->describe().find("pods-running.yaml") != std::string::npos);
  CHECK_FALSE(yaml->by_node().empty());
}
