// The admission webhook's answer: GPU annotations as required node affinity, one term per label
// vocabulary, ANDed with the pod's own terms; idempotent; invalid annotations refused by name.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gpu_extender/kube/kube_config.h"  // base64_decode
#include "policy/gpu_model_match.h"
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
  const Reviewed r = review(pod_with({{"gpu.nvidia.com/memory", "81920"}}));
  const json terms = terms_of(r.pod);
  REQUIRE(terms.size() == 4);  // no GKE term: GKE has no memory label, which the extender needs
  for (const json& term : terms) {
    REQUIRE(term["matchExpressions"].size() == 1);
    CHECK(term["matchExpressions"][0]["operator"] == "Gt");
    CHECK(term["matchExpressions"][0]["values"] == json::array({"81919"}));
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
