// DeviceTaintRules (resource.k8s.io/v1, GA in 1.37) as the API server returns them: metadata, the device
// selector (driver, pool, device), the taint with the timeAdded the server sets, and the status the
// eviction controller writes; lists and watch events, and bad input named by its field.
#include <catch2/catch.hpp>

#include <string>

#include "gpu_extender/wire/wire.h"

using namespace gpu_extender;

namespace {

const ViewSchema kNoSchema;  // what these kinds decode reads no schema
std::string rule_json(const std::string& name, const std::string& selector) {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":")" + name +
         R"(","uid":"0b8f2c1e-5d7a-4f6e-9c3b-2a1d0e9f8c7b","resourceVersion":"812","generation":1,)"
         R"("creationTimestamp":"2026-12-06T15:00:00Z"},"spec":{)" + selector +
         R"("taint":{"key":"example.com/maintenance","value":"true","effect":"NoExecute",)"
         R"("timeAdded":"2026-12-06T15:00:00Z"}},"status":{"conditions":[{"type":"EvictionInProgress",)"
         R"("status":"False","observedGeneration":1,"lastTransitionTime":"2026-12-06T15:00:01Z",)"
         R"("reason":"NoEviction","message":"0 pods need to be evicted"}]}})";
}
}  // namespace

TEST_CASE("device taint rules: a list, with and without selector fields") {
  WireDecoder decoder;
  const std::string body =
      R"({"kind":"DeviceTaintRuleList","apiVersion":"resource.k8s.io/v1","metadata":{"resourceVersion":"900"},"items":[)" +
      rule_json("drain-gpu-3", R"("deviceSelector":{"driver":"gpu.nvidia.com","pool":"node-a","device":"gpu-3"},)") +
      "," + rule_json("drain-all", R"("deviceSelector":{},)") + "," + rule_json("none", "") + "]}";
  std::vector<DeviceTaintRuleView> rules;
  std::vector<std::string> names;
  const ListMeta meta = decoder.decode_list<DeviceTaintRuleView>(body, kNoSchema, [&](const DeviceTaintRuleView& r) {
    rules.push_back(r);
    names.emplace_back(r.name);
  });
  CHECK(meta.resource_version == "900");
  REQUIRE(rules.size() == 3);
  CHECK(names == std::vector<std::string>{"drain-gpu-3", "drain-all", "none"});
  CHECK(rules[0].has_selector);
  CHECK(rules[0].driver == std::optional<std::string_view>("gpu.nvidia.com"));
  CHECK(rules[0].pool == std::optional<std::string_view>("node-a"));
  CHECK(rules[0].device == std::optional<std::string_view>("gpu-3"));
  CHECK(rules[0].taint == DeviceTaint{"example.com/maintenance", "true", "NoExecute"});
  CHECK(rules[1].has_selector);
  CHECK_FALSE(rules[1].driver);
  CHECK_FALSE(rules[2].has_selector);  // no selector: selects no device
}

TEST_CASE("device taint rules: a watch event, and bad input named by its field") {
  WireDecoder decoder;
  DeviceTaintRuleView rule;
  const WatchEventHeader h = decoder.decode_event<DeviceTaintRuleView>(
      R"({"type":"DELETED","object":)" + rule_json("drain-gpu-3", R"("deviceSelector":{"pool":null},)") + "}", kNoSchema, rule);
  CHECK(h.type == "DELETED");
  CHECK(h.resource_version == "812");
  CHECK(rule.name == "drain-gpu-3");
  CHECK_FALSE(rule.pool);
  auto error_of = [&](const std::string& selector) {
    try {
      decoder.decode_event<DeviceTaintRuleView>(R"({"type":"ADDED","object":)" + rule_json("r", selector) + "}", kNoSchema, rule);
    } catch (const DecodeError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of(R"("deviceSelector":{"device":7},)").find("object.spec.deviceSelector.device") != std::string::npos);
  CHECK(error_of(R"("deviceSelector":[],)").find("object.spec.deviceSelector") != std::string::npos);
  CHECK(decoder.decode_event<DeviceTaintRuleView>(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})", kNoSchema,
                                               rule).resource_version == "9");
}
