// The admission webhook's answer: GPU annotations as required node affinity, one term per label
// vocabulary, ANDed with the pod's own terms; idempotent; invalid annotations refused by name.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <tuple>

#include "gpu_extender/kube/kube_config.h"  // base64_decode
#include "gpu_extender/policy/gpu_memory_size.h"
#include "policy/gpu_model_match.h"
#include "server/admission/json_depth.h"
#include "server/admission/pod_admission.h"

using nlohmann::json;
using namespace gpu_extender;
using namespace gpu_extender::admission;

namespace {
json pod_with(json annotations, json affinity = nullptr, const std::string& scheduler = "gpu-scheduler") {
  json container = {{"name", "c"}, {"image", "x"}};
  container["resources"]["limits"]["nvidia.com/gpu"] = "8";
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  pod["metadata"] = {{"name", "w"}, {"namespace", "train"}};
  pod["spec"]["schedulerName"] = scheduler;
  pod["spec"]["containers"] = json::array({container});
  if (!annotations.is_null()) pod["metadata"]["annotations"] = annotations;
  if (!affinity.is_null()) pod["spec"]["affinity"] = affinity;
  return pod;
}

struct Reviewed {
  json response;
  json pod;  // the pod with the patch applied
};

Reviewed review(const json& pod, const SeenValues& seen = {}) {
  const json request = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                        {"request", {{"uid", "r-1"}, {"operation", "CREATE"}, {"object", pod}}}};
  const AdmissionAnswer answer = admit_pod(request.dump(), ViewSchema{}, {"gpu-scheduler"}, seen);
  INFO(answer.body);
  REQUIRE(answer.status == 200);
  const json body = json::parse(answer.body);
  CHECK(body["kind"] == "AdmissionReview");
  const json response = body["response"];
  CHECK(response["uid"] == "r-1");
  Reviewed out{response, pod};
  if (response.contains("patch")) {
    CHECK(response["patchType"] == "JSONPatch");
    out.pod = pod.patch(json::parse(base64_decode(response["patch"].get<std::string>())));
  }
  return out;
}

json terms_of(const json& pod) {
  return pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
}

// The values of `key` in a term ("" when the term has no such requirement).
std::vector<std::string> values_of(const json& term, const std::string& key) {
  for (const auto& r : term["matchExpressions"])
    if (r["key"] == key) return r["values"].get<std::vector<std::string>>();
  return {};
}
}  // namespace

TEST_CASE("admission: a model becomes one term per vocabulary, each value one the extender's model rule accepts") {
  const Reviewed r = review(pod_with({{"gpu.nvidia.com/model", "H100"}}));
  CHECK(r.response["allowed"] == true);
  const json terms = terms_of(r.pod);
  REQUIRE(terms.size() == 5);
  CHECK(values_of(terms[0], "gpu.nvidia.com/model") == std::vector<std::string>{"H100"});
  CHECK(values_of(terms[2], "karpenter.k8s.aws/instance-gpu-name") == std::vector<std::string>{"h100"});
  CHECK(values_of(terms[3], "eks.amazonaws.com/instance-gpu-name") == std::vector<std::string>{"h100"});
  CHECK(values_of(terms[4], "cloud.google.com/gke-accelerator") ==
        std::vector<std::string>{"nvidia-h100-80gb", "nvidia-h100-mega-80gb"});
  const auto gfd = values_of(terms[1], "nvidia.com/gpu.product");
  CHECK(std::find(gfd.begin(), gfd.end(), "NVIDIA-H100-80GB-HBM3") != gfd.end());
  for (const json& term : terms)
    for (const auto& req : term["matchExpressions"]) {
      CHECK(req["operator"] == "In");
      for (const auto& v : req["values"]) CHECK(rules::gpu_model_matches("H100", v.get<std::string>()));
    }
  CHECK(r.pod["metadata"]["annotations"][kAddedAnnotation] == "true");
  // A value seen on a node of the cluster that the rule accepts is added; one it refuses is not.
  const Reviewed seen = review(pod_with({{"gpu.nvidia.com/model", "H100"}}),
                               {{"nvidia.com/gpu.product", {"NVIDIA-H100-SXM5-94GB", "NVIDIA-GH100X"}}});
  const auto with_seen = values_of(terms_of(seen.pod)[1], "nvidia.com/gpu.product");
  CHECK(std::find(with_seen.begin(), with_seen.end(), "NVIDIA-H100-SXM5-94GB") != with_seen.end());
  CHECK(std::find(with_seen.begin(), with_seen.end(), "NVIDIA-GH100X") == with_seen.end());
}

TEST_CASE("admission: memory per GPU is Gt on each memory label, and a vocabulary without one gets no term") {
  // Gt the lowest figure the extender judges 80 GiB (gpu_memory_size.h): GFD's 81559 for an H100 passes.
  const Reviewed r = review(pod_with({{"gpu.nvidia.com/memory", "81920"}}));
  const json terms = terms_of(r.pod);
  REQUIRE(terms.size() == 4);  // no GKE term: GKE has no memory label, which the extender needs
  for (const json& term : terms) {
    REQUIRE(term["matchExpressions"].size() == 1);
    CHECK(term["matchExpressions"][0]["operator"] == "Gt");
    CHECK(term["matchExpressions"][0]["values"] == json::array({"75366"}));
  }
  CHECK(terms[2]["matchExpressions"][0]["key"] == "karpenter.k8s.aws/instance-gpu-memory");
}

TEST_CASE("admission: a family is the family labels, or the catalog's models of that family") {
  const json terms = terms_of(review(pod_with({{"gpu.nvidia.com/family", "Hopper"}})).pod);
  REQUIRE(terms.size() == 5);
  CHECK(values_of(terms[0], "gpu.nvidia.com/family") == std::vector<std::string>{"hopper", "Hopper"});
  CHECK(values_of(terms[1], "nvidia.com/gpu.family") == std::vector<std::string>{"hopper", "Hopper"});
  CHECK(values_of(terms[2], "karpenter.k8s.aws/instance-gpu-name") == std::vector<std::string>{"h100", "h200"});
}

TEST_CASE("admission: the pod's own required terms are kept, each ANDed with each GPU term") {
  const json affinity = {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", {
      {{"matchExpressions", {{{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}}}}},
      {{"matchExpressions", {{{"key", "zone"}, {"operator", "In"}, {"values", {"b"}}}}}}}}}}}},
      {"podAntiAffinity", {{"preferredDuringSchedulingIgnoredDuringExecution", json::array()}}}};
  const Reviewed r = review(pod_with({{"gpu.nvidia.com/model", "A100"}, {"gpu.nvidia.com/memory", "40960"}}, affinity));
  const json terms = terms_of(r.pod);
  REQUIRE(terms.size() == 2 * 4);
  for (size_t i = 0; i < terms.size(); ++i) {
    const json& first = terms[i]["matchExpressions"][0];
    CHECK(first["key"] == "zone");
    CHECK(first["values"][0] == (i < 4 ? "a" : "b"));
    CHECK(terms[i]["matchExpressions"].size() == 3);  // zone, model, memory
  }
  CHECK(r.pod["spec"]["affinity"]["podAntiAffinity"].is_object());  // the rest of the affinity is kept
  // Preferred node affinity, without required terms: the required part is added beside it.
  const json preferred = {{"nodeAffinity", {{"preferredDuringSchedulingIgnoredDuringExecution", json::array()}}}};
  const Reviewed p = review(pod_with({{"gpu.nvidia.com/model", "A100"}}, preferred));
  CHECK(terms_of(p.pod).size() == 5);
  CHECK(p.pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"].is_array());
}

TEST_CASE("admission: idempotent, other schedulers' pods and pods asking nothing unchanged, bad annotations refused") {
  json done = pod_with({{"gpu.nvidia.com/model", "H100"}});
  const Reviewed once = review(done);
  const Reviewed twice = review(once.pod);
  CHECK_FALSE(twice.response.contains("patch"));
  CHECK(terms_of(twice.pod) == terms_of(once.pod));
  CHECK_FALSE(review(pod_with({{"gpu.nvidia.com/model", "H100"}}, nullptr, "default-scheduler")).response.contains("patch"));
  CHECK_FALSE(review(pod_with(nullptr)).response.contains("patch"));
  const Reviewed bad = review(pod_with({{"gpu.nvidia.com/memory", "40GB"}}));
  CHECK(bad.response["allowed"] == false);
  CHECK(bad.response["status"]["code"] == 400);
  CHECK_THAT(bad.response["status"]["message"].get<std::string>(), Catch::Contains("gpu.nvidia.com/memory"));
}

TEST_CASE("admission: a review that is not one is a 400 naming the field") {
  const AdmissionAnswer a = admit_pod("{", ViewSchema{}, {"gpu-scheduler"}, {});
  CHECK(a.status == 400);
  CHECK_THAT(a.body, Catch::Contains("not valid JSON"));
  const AdmissionAnswer b = admit_pod(R"({"request":{"uid":"u"}})", ViewSchema{}, {"gpu-scheduler"}, {});
  CHECK(b.status == 400);
  CHECK_THAT(b.body, Catch::Contains("request.object"));
}

namespace {
// A review as the API server sends it (admission.k8s.io/v1 AdmissionRequest, every field it fills for a
// pod's CREATE).
json full_review(const json& pod, const std::string& operation = "CREATE") {
  json request = {{"uid", "r-2"},
                  {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                  {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                  {"requestKind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                  {"requestResource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                  {"name", "w"},
                  {"namespace", "train"},
                  {"operation", operation},
                  {"userInfo", {{"username", "kubernetes-admin"}, {"groups", {"system:masters", "system:authenticated"}}}},
                  {"object", pod},
                  {"oldObject", nullptr},
                  {"dryRun", false},
                  {"options", {{"kind", "CreateOptions"}, {"apiVersion", "meta.k8s.io/v1"}}}};
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}};
}

AdmissionAnswer admit(const json& review) { return admit_pod(review.dump(), ViewSchema{}, {"gpu-scheduler"}, {}); }
AdmissionAnswer admit(const std::string& text) { return admit_pod(text, ViewSchema{}, {"gpu-scheduler"}, {}); }

// The answer's AdmissionResponse, checked to be allowed without a patch.
void check_unchanged(const AdmissionAnswer& a, const std::string& detail) {
  INFO(a.body);
  REQUIRE(a.status == 200);
  const json response = json::parse(a.body)["response"];
  CHECK(response["allowed"] == true);
  CHECK_FALSE(response.contains("patch"));
  CHECK_FALSE(response.contains("patchType"));
  CHECK_THAT(a.detail, Catch::Contains(detail));
}

// The 400 the review gets, with an Error naming `field`; the body is JSON whatever the review held.
void check_refused(const AdmissionAnswer& a, const std::string& field) {
  INFO(a.body);
  CHECK(a.status == 400);
  const json body = json::parse(a.body);
  REQUIRE(body["Error"].is_string());
  CHECK_THAT(body["Error"].get<std::string>(), Catch::Contains(field));
}

json zone_term(const std::string& zone) {
  return {{"matchExpressions", {{{"key", "zone"}, {"operator", "In"}, {"values", {zone}}}}}};
}
json required_affinity(const json& terms) {
  return {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
}

// Whether a node with `labels` satisfies the terms, as Kubernetes decides (component-helpers
// nodeaffinity: terms ORed, requirements ANDed, a null or empty term matching no node). The operators
// the webhook writes and these tests use: In, Gt.
bool node_matches(const json& terms, const std::map<std::string, std::string>& labels) {
  for (const json& term : terms) {
    const bool expressions = term.is_object() && term.contains("matchExpressions") && !term["matchExpressions"].empty();
    const bool fields = term.is_object() && term.contains("matchFields") && !term["matchFields"].empty();
    if (!expressions && !fields) continue;
    bool all = !fields;  // these tests' nodes have no fields to match
    if (expressions)
      for (const json& r : term["matchExpressions"]) {
        const auto it = labels.find(r["key"].get<std::string>());
        bool ok = false;
        if (it != labels.end() && r["operator"] == "In")
          for (const json& v : r["values"]) ok = ok || v == it->second;
        if (it != labels.end() && r["operator"] == "Gt") ok = std::stoll(it->second) > std::stoll(r["values"][0].get<std::string>());
        all = all && ok;
      }
    if (all) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("admission: a node Karpenter launches for a memory term is one the extender keeps once GFD labels it") {
  // Per GPU: Karpenter's instance-gpu-memory for it, and GFD's nvidia.com/gpu.memory (NVML) on the node.
  const std::vector<std::tuple<const char*, int64_t, int64_t>> gpus = {
      {"t4", 16384, 15360}, {"l4", 22888, 23034}, {"a10g", 24576, 23028}, {"l40s", 45776, 46068},
      {"a100", 40960, 40536}, {"h100", 81920, 81559}, {"h200", 144384, 143771}};
  for (const int64_t gib : {16, 24, 40, 48, 80, 141}) {
    const json terms = terms_of(review(pod_with({{"gpu.nvidia.com/memory", std::to_string(gib) + "Gi"}})).pod);
    for (const auto& [name, karpenter, nvml] : gpus) {
      INFO(gib << " GiB asked, " << name);
      const bool launched = node_matches(terms, {{"karpenter.k8s.aws/instance-gpu-memory", std::to_string(karpenter)}});
      const bool after_gfd = node_matches(terms, {{"karpenter.k8s.aws/instance-gpu-memory", std::to_string(karpenter)},
                                                  {"nvidia.com/gpu.memory", std::to_string(nvml)}});
      CHECK(launched == (judged_gpu_memory_mib(nvml) >= gib * 1024));  // what the extender will judge
      CHECK(launched == (judged_gpu_memory_mib(karpenter) >= gib * 1024));
      CHECK(after_gfd == launched);
    }
  }
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

TEST_CASE("admission: an own term with no requirement stays one, matching no node") {
  const json h100 = {{"gpu.nvidia.com/model", "H100"}};
  const std::map<std::string, std::string> in_a = {{"zone", "a"}, {"gpu.nvidia.com/model", "H100"}};
  const std::map<std::string, std::string> in_b = {{"zone", "b"}, {"gpu.nvidia.com/model", "H100"}};
  const std::map<std::string, std::string> a100_in_a = {{"zone", "a"}, {"gpu.nvidia.com/model", "A100"}};
  const json empties = json::array({json::object(), nullptr,
                                     {{"matchExpressions", json::array()}, {"matchFields", json::array()}},
                                     {{"matchExpressions", nullptr}}});
  for (const json& empty : empties) {
    INFO(empty.dump());
    const json own = {zone_term("a"), empty};
    CHECK(node_matches(own, in_a));
    CHECK_FALSE(node_matches(own, in_b));
    const json terms = terms_of(review(pod_with(h100, required_affinity(own))).pod);
    REQUIRE(terms.size() == 5 + 1);
    CHECK(terms[5] == empty);  // kept as it is, not ANDed with the GPU's terms
    for (size_t i = 0; i < 5; ++i) CHECK(values_of(terms[i], "zone") == std::vector<std::string>{"a"});
    CHECK(node_matches(terms, in_a));
    CHECK_FALSE(node_matches(terms, in_b));  // the empty term does not become "any zone"
    CHECK_FALSE(node_matches(terms, a100_in_a));
    // Before the zone term, the same.
    const json first = terms_of(review(pod_with(h100, required_affinity({empty, zone_term("a")}))).pod);
    REQUIRE(first.size() == 1 + 5);
    CHECK(first[0] == empty);
    CHECK_FALSE(node_matches(first, in_b));
  }
  // Required affinity with no term that has a requirement matches no node: the pod is left as it is, so
  // it goes on matching none (a patch ANDing the GPU terms into them would let it go to any GPU node).
  for (const json& own : {json::array({json::object()}), json::array({nullptr, json::object()}), json::array(), json(nullptr)}) {
    INFO(own.dump());
    const json pod = pod_with(h100, required_affinity(own));
    const AdmissionAnswer a = admit(full_review(pod));
    check_unchanged(a, "matches no node: unchanged");
  }
  // A term with matchFields alone has a requirement: ANDed like any other.
  const json by_name = {{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n1"}}}}}};
  const json terms = terms_of(review(pod_with(h100, required_affinity(json::array({by_name})))).pod);
  REQUIRE(terms.size() == 5);
  for (const json& term : terms) {
    CHECK(term["matchFields"] == by_name["matchFields"]);
    CHECK(term["matchExpressions"].size() == 1);
  }
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
