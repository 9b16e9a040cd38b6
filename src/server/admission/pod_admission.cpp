// The pod admission webhook: see pod_admission.h.
#include "server/admission/pod_admission.h"

#include <openssl/evp.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gpu_extender/wire/wire.h"

namespace gpu_extender::admission {
namespace {
using nlohmann::json;

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

json requirement_json(const Requirement& r) { return {{"key", r.key}, {"operator", r.op}, {"values", r.values}}; }

// The pod's own required terms, each ANDed with each vocabulary's term.
json combined_terms(const json& own_terms, const std::vector<Term>& gpu_terms) {
  json out = json::array();
  const json own = own_terms.is_array() && !own_terms.empty() ? own_terms : json::array({json::object()});
  for (const json& mine : own)
    for (const Term& term : gpu_terms) {
      json combined = mine.is_object() ? mine : json::object();
      json& expressions = combined["matchExpressions"];
      if (!expressions.is_array()) expressions = json::array();
      for (const Requirement& r : term) expressions.push_back(requirement_json(r));
      out.push_back(std::move(combined));
    }
  return out;
}

// The JSON Patch that puts `terms` in place of the pod's required node affinity terms and marks it done.
json patch_for(const json& pod, const json& terms) {
  json patch = json::array();
  const json& spec = pod["spec"];
  const json required = {{"nodeSelectorTerms", terms}};
  if (!spec.contains("affinity") || !spec["affinity"].is_object()) {
    patch.push_back({{"op", "add"}, {"path", "/spec/affinity"}, {"value", {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", required}}}}}});
  } else if (!spec["affinity"].contains("nodeAffinity") || !spec["affinity"]["nodeAffinity"].is_object()) {
    patch.push_back({{"op", "add"}, {"path", "/spec/affinity/nodeAffinity"}, {"value", {{"requiredDuringSchedulingIgnoredDuringExecution", required}}}});
  } else if (!spec["affinity"]["nodeAffinity"].contains("requiredDuringSchedulingIgnoredDuringExecution") ||
             !spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"].is_object()) {
    patch.push_back({{"op", "add"}, {"path", "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"}, {"value", required}});
  } else {
    patch.push_back({{"op", "add"}, {"path", "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms"}, {"value", terms}});
  }
  const json& metadata = pod["metadata"];
  if (!metadata.contains("annotations") || !metadata["annotations"].is_object())
    patch.push_back({{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{kAddedAnnotation, "true"}}}});
  else
    patch.push_back({{"op", "add"}, {"path", "/metadata/annotations/gpu.nvidia.com~1node-affinity-added"}, {"value", "true"}});
  return patch;
}

AdmissionAnswer refuse_review(const std::string& why) {
  return {400, json({{"Error", why}}).dump(), why};
}

}  // namespace

AdmissionAnswer admit_pod(const std::string& review_text, const ViewSchema& schema,
                          const std::vector<std::string>& scheduler_names, const SeenValues& seen) {
  json review;
  try {
    review = json::parse(review_text);
  } catch (const json::exception& e) {
    return refuse_review(std::string("AdmissionReview: not valid JSON: ") + e.what());
  }
  if (!review.is_object() || !review.contains("request") || !review["request"].is_object())
    return refuse_review("request: missing (an admission.k8s.io/v1 AdmissionReview is expected)");
  const json& request = review["request"];
  if (!request.contains("uid") || !request["uid"].is_string()) return refuse_review("request.uid: missing");
  if (!request.contains("object") || !request["object"].is_object()) return refuse_review("request.object: missing");
  json pod = request["object"];
  if (!pod.contains("spec") || !pod["spec"].is_object()) return refuse_review("request.object.spec: missing");
  if (!pod.contains("metadata") || !pod["metadata"].is_object()) pod["metadata"] = json::object();

  json response = {{"uid", request["uid"]}, {"allowed", true}};
  AdmissionAnswer answer;
  auto finish = [&](std::string detail) {
    answer.detail = std::move(detail);
    answer.body = json({{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}}).dump();
    return answer;
  };
  const std::string scheduler = pod["spec"].value("schedulerName", std::string("default-scheduler"));
  if (std::find(scheduler_names.begin(), scheduler_names.end(), scheduler) == scheduler_names.end())
    return finish("not a pod of --scheduler-name (" + scheduler + "): unchanged");
  const json& annotations = pod["metadata"].value("annotations", json::object());
  if (annotations.is_object() && annotations.contains(kAddedAnnotation)) return finish("affinity added before: unchanged");

  PodRequest facts;
  WireDecoder decoder;
  try {
    facts = decoder.decode_pod_object(pod.dump(), schema);
  } catch (const DecodeError& e) {
    return refuse_review(std::string("request.object: ") + e.what());
  }
  if (!facts.invalid_reason.empty()) {
    response["allowed"] = false;
    response["status"] = {{"code", 400}, {"reason", "BadRequest"},
                          {"message", "gpu-extender: " + facts.invalid_reason + " (no node could ever be chosen for this pod)"}};
    return finish("refused: " + facts.invalid_reason);
  }
  const std::vector<Term> terms = gpu_affinity_terms(facts, seen);
  if (terms.empty()) return finish("asks no GPU model, memory or family: unchanged");
  const json& own = pod["spec"].value("affinity", json::object());
  json own_terms = json::array();
  if (own.is_object() && own.contains("nodeAffinity") && own["nodeAffinity"].is_object()) {
    const json& required = own["nodeAffinity"].value("requiredDuringSchedulingIgnoredDuringExecution", json::object());
    if (required.is_object()) own_terms = required.value("nodeSelectorTerms", json::array());
  }
  const size_t count = std::max<size_t>(own_terms.size(), 1) * terms.size();
  if (count > kMaxTerms) {
    response["warnings"] = {"gpu-extender: the pod's " + std::to_string(own_terms.size()) +
                            " node affinity terms times the GPU's " + std::to_string(terms.size()) +
                            " would make more than " + std::to_string(kMaxTerms) + "; no GPU affinity added"};
    return finish("too many terms: unchanged");
  }
  response["patchType"] = "JSONPatch";
  response["patch"] = base64(patch_for(pod, combined_terms(own_terms, terms)).dump());
  return finish("added " + std::to_string(count) + " node affinity term(s)");
}

}  // namespace gpu_extender::admission
