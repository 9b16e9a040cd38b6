// The admission webhook's reviews: only a pod's CREATE is mutated, a dry run answered as the same
// review; a review that is not one, nested too deep, with a field of the wrong type or a part missing is
// a 400 naming it, never an exception or a stack overflow.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "pod_admission_support.h"
#include "server/admission/json_depth.h"

using nlohmann::json;
using namespace gpu_extender;
using namespace gpu_extender::admission;
using namespace pod_admission_support;

namespace {
// The 400 the review gets, with an Error naming `field`; the body is JSON whatever the review held.
void check_refused(const AdmissionAnswer& a, const std::string& field) {
  INFO(a.body);
  CHECK(a.status == 400);
  const json body = json::parse(a.body);
  REQUIRE(body["Error"].is_string());
  CHECK_THAT(body["Error"].get<std::string>(), Catch::Contains(field));
}
}  // namespace

TEST_CASE("admission: a review that is not one is a 400 naming the field") {
  const AdmissionAnswer a = admit_pod("{", ViewSchema{}, {"gpu-scheduler"}, {});
  CHECK(a.status == 400);
  CHECK_THAT(a.body, Catch::Contains("not valid JSON"));
  const AdmissionAnswer b = admit_pod(R"({"request":{"uid":"u"}})", ViewSchema{}, {"gpu-scheduler"}, {});
  CHECK(b.status == 400);
  CHECK_THAT(b.body, Catch::Contains("request.object"));
}

TEST_CASE("admission: a review nested deeper than kMaxReviewDepth is a 400 naming the depth, never a stack overflow") {
  // 200,000 arrays inside a pod's spec (400 KB): parsing alone is iterative, but copying or dumping the
  // tree recursed once per level and overflowed the stack.
  const std::string deep = R"({"request":{"uid":"u","operation":"CREATE","object":{"metadata":{},"spec":{"x":)" +
                           std::string(200000, '[') + std::string(200000, ']') + "}}}}";
  check_refused(admit(deep), "AdmissionReview: JSON nested more than 128 deep");
  check_refused(admit(std::string(200000, '[')), "nested more than 128 deep");  // unclosed
  check_refused(admit(std::string(100000, '{')), "nested more than 128 deep");
  // The bound is on the whole review: review, request, object, spec and 124 arrays are 128 levels.
  auto nested = [](size_t arrays) {
    json pod = pod_with(nullptr);
    pod["spec"]["x"] = json::array();
    for (size_t i = 1; i < arrays; ++i) pod["spec"]["x"] = json::array({pod["spec"]["x"]});
    return json({{"request", {{"uid", "u"}, {"operation", "CREATE"}, {"object", pod}}}}).dump();
  };
  check_unchanged(admit(nested(124)), "asks no GPU");
  check_refused(admit(nested(125)), "nested more than 128 deep");
  // Brackets inside strings are not nesting, escaped quotes included.
  json pod = pod_with({{"note", std::string(1000, '[') + "\\\"[[" + std::string(1000, '{')}});
  check_unchanged(admit(full_review(pod)), "asks no GPU");
  CHECK_FALSE(json_nests_deeper_than(R"(["\"[[[", "\\", [[]]])", 3));
  CHECK(json_nests_deeper_than(R"(["\\", [[[]]]])", 3));
  CHECK_FALSE(json_nests_deeper_than(R"(]]]][[[)", 3));  // not JSON: an upper bound of what a parser builds
  CHECK(json_nests_deeper_than(R"(]]]][[[[)", 3));
}

TEST_CASE("admission: a field of the wrong type is a 400 naming it, never an exception") {
  json pod = pod_with({{"gpu.nvidia.com/model", "H100"}});
  pod["spec"]["schedulerName"] = 5;
  check_refused(admit(full_review(pod)), "request.object.spec.schedulerName: not a string");
  pod["spec"]["schedulerName"] = nullptr;  // as absent: the default scheduler's pod
  check_unchanged(admit(full_review(pod)), "default-scheduler");
  auto with = [](const std::string& path, const json& value) {
    json review = full_review(pod_with({{"gpu.nvidia.com/model", "H100"}}));
    review[json::json_pointer(path)] = value;
    return admit(review);
  };
  check_refused(with("/request/uid", 7), "request.uid: not a string");
  check_refused(with("/request/operation", json::array({"CREATE"})), "request.operation: not a string");
  check_refused(with("/request/kind", "Pod"), "request.kind: not an object");
  check_refused(with("/request/kind/version", 1), "request.kind.version: not a string");
  check_refused(with("/request/resource/resource", true), "request.resource.resource: not a string");
  check_refused(with("/request/subResource", 0), "request.subResource: not a string");
  check_refused(with("/request/object/metadata", "w"), "request.object.metadata: not an object");
  check_refused(with("/request/object/metadata/annotations", "x"), "request.object.metadata.annotations: not an object");
  check_refused(with("/request/object/spec/affinity", json::array()), "request.object.spec.affinity: not an object");
  check_refused(with("/request/object/spec/affinity", json({{"nodeAffinity", 1}})),
                "request.object.spec.affinity.nodeAffinity: not an object");
  const std::string required = "request.object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  check_refused(with("/request/object/spec/affinity", json({{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", "x"}}}})),
                required + ": not an object");
  check_refused(with("/request/object/spec/affinity", required_affinity(zone_term("a"))),  // an object, not a list
                required + ".nodeSelectorTerms: not an array");
  check_refused(with("/request/object/spec/affinity", required_affinity({zone_term("a"), "zone"})),
                required + ".nodeSelectorTerms[1]: not an object");
  check_refused(with("/request/object/spec/affinity", required_affinity({{{"matchExpressions", {{"key", "zone"}}}}})),
                required + ".nodeSelectorTerms[0].matchExpressions: not an array");
  check_refused(with("/request/object/spec/affinity", required_affinity({{{"matchFields", 3}}})),
                required + ".nodeSelectorTerms[0].matchFields: not an array");
  // Bytes that are not UTF-8, quoted by the parser's message, still make a JSON body.
  check_refused(admit(std::string("\xff\xfe")), "not valid JSON");
  check_refused(admit(std::string("{\"request\":\"\xc3\"}")), "not valid JSON");
}

TEST_CASE("admission: only a pod's CREATE is mutated, while UPDATE, DELETE, CONNECT, other kinds and subresources pass unchanged") {
  const json pod = pod_with({{"gpu.nvidia.com/model", "H100"}});
  const AdmissionAnswer create = admit(full_review(pod));
  REQUIRE(create.status == 200);
  CHECK(json::parse(create.body)["response"]["patchType"] == "JSONPatch");  // the real review's shape is mutated
  // UPDATE: a pod's affinity cannot change once it exists; a patch would get the update refused.
  json update = full_review(pod, "UPDATE");
  update["request"]["oldObject"] = pod;
  update["request"]["options"] = {{"kind", "UpdateOptions"}, {"apiVersion", "meta.k8s.io/v1"}};
  check_unchanged(admit(update), "operation UPDATE: unchanged");
  CHECK(json::parse(admit(update).body)["response"]["uid"] == "r-2");
  // DELETE carries no object, only the old one.
  json del = full_review(pod, "DELETE");
  del["request"].erase("object");
  del["request"]["oldObject"] = pod;
  check_unchanged(admit(del), "operation DELETE: unchanged");
  json connect = full_review({{"kind", "PodExecOptions"}, {"apiVersion", "v1"}, {"command", {"sh"}}}, "CONNECT");
  connect["request"]["subResource"] = "exec";
  check_unchanged(admit(connect), "operation CONNECT: unchanged");
  // Another kind or resource, sent to the webhook by a broader rule.
  json deployment = full_review(pod);
  deployment["request"]["kind"] = {{"group", "apps"}, {"version", "v1"}, {"kind", "Deployment"}};
  deployment["request"]["resource"] = {{"group", "apps"}, {"version", "v1"}, {"resource", "deployments"}};
  check_unchanged(admit(deployment), "not a core v1 Pod (kind apps/v1 Deployment)");
  json other_version = full_review(pod);
  other_version["request"]["resource"]["version"] = "v2";
  check_unchanged(admit(other_version), "not core v1 pods (resource v2 pods)");
  // A subresource: the binding a scheduler creates, the status a kubelet writes.
  json binding = full_review({{"kind", "Binding"}, {"apiVersion", "v1"}, {"target", {{"kind", "Node"}, {"name", "n"}}}});
  binding["request"]["kind"] = {{"group", ""}, {"version", "v1"}, {"kind", "Binding"}};
  binding["request"]["subResource"] = "binding";
  check_unchanged(admit(binding), "not a core v1 Pod (kind v1 Binding)");
  json status = full_review(pod, "CREATE");
  status["request"]["subResource"] = "status";
  check_unchanged(admit(status), "subresource status: unchanged");
  json ephemeral = full_review(pod, "UPDATE");
  ephemeral["request"]["subResource"] = "ephemeralcontainers";
  check_unchanged(admit(ephemeral), "operation UPDATE");
}

TEST_CASE("admission: a dry run is answered exactly as the same review, and answering has no side effect") {
  for (const json& pod : {pod_with({{"gpu.nvidia.com/model", "H100"}}), pod_with({{"gpu.nvidia.com/memory", "40GB"}}),
                          pod_with(nullptr)}) {
    json review = full_review(pod);
    const AdmissionAnswer wet = admit(review);
    review["request"]["dryRun"] = true;
    const AdmissionAnswer dry = admit(review);
    CHECK(dry.status == wet.status);
    CHECK(dry.body == wet.body);
    CHECK(dry.detail == wet.detail);
    // Nothing is remembered from one review to the next: the same review, the same answer.
    const AdmissionAnswer again = admit(review);
    CHECK(again.body == dry.body);
  }
  json update = full_review(pod_with({{"gpu.nvidia.com/model", "H100"}}), "UPDATE");
  const std::string wet = admit(update).body;
  update["request"]["dryRun"] = true;
  CHECK(admit(update).body == wet);
}

TEST_CASE("admission: each malformed part of a review is a 400 naming it") {
  const json pod = pod_with({{"gpu.nvidia.com/model", "H100"}});
  check_refused(admit(std::string("[]")), "request: missing");
  check_refused(admit(std::string(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})")), "request: missing");
  check_refused(admit(std::string(R"({"request":null})")), "request: missing");
  check_refused(admit(std::string(R"({"request":[1]})")), "request: not an object");
  auto without = [&](const std::string& path) {
    json review = full_review(pod);
    const json::json_pointer at(path);
    review[at.parent_pointer()].erase(at.back());
    return admit(review);
  };
  check_refused(without("/request/uid"), "request.uid: missing");
  check_refused(without("/request/object"), "request.object: missing");
  check_refused(without("/request/object/spec"), "request.object.spec: missing");
  auto with = [&](const std::string& path, const json& value) {
    json review = full_review(pod);
    review[json::json_pointer(path)] = value;
    return admit(review);
  };
  check_refused(with("/request/object", "pod"), "request.object: not an object");
  check_refused(with("/request/object/spec", json::array()), "request.object.spec: not an object");
  check_refused(with("/request/object", nullptr), "request.object: missing");
  // Missing metadata is an empty one (a pod without annotations), not a fault.
  json bare = pod;
  bare.erase("metadata");
  check_unchanged(admit(full_review(bare)), "asks no GPU model");
}
