// The admission webhook's terms: GPU annotations as required node affinity, one term per label
// vocabulary, ANDed with the pod's own terms (an own term with no requirement kept as it is); memory
// terms Karpenter's nodes satisfy as the extender will judge them; idempotent; invalid annotations
// refused by name.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <tuple>

#include "gpu_extender/kube/kube_config.h"  // base64_decode
#include "gpu_extender/policy/gpu_memory_size.h"
#include "gpu_extender/policy/gpu_model_match.h"
#include "pod_admission_support.h"

using nlohmann::json;
using namespace gpu_extender;
using namespace gpu_extender::admission;
using namespace pod_admission_support;

namespace {

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
