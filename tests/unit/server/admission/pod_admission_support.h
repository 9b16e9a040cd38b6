#pragma once
// The admission webhook's test bed, shared by the tests of the terms it writes and of the reviews it
// answers: a GPU pod of the extender's scheduler, a review as the API server sends it, the webhook's
// answer to it, and node affinity terms.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "server/admission/pod_admission.h"

namespace pod_admission_support {

using nlohmann::json;
using gpu_extender::ViewSchema;
using gpu_extender::admission::AdmissionAnswer;
using gpu_extender::admission::admit_pod;

inline json pod_with(json annotations, json affinity = nullptr, const std::string& scheduler = "gpu-scheduler") {
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

// A review as the API server sends it (admission.k8s.io/v1 AdmissionRequest, every field it fills for a
// pod's CREATE).
inline json full_review(const json& pod, const std::string& operation = "CREATE") {
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

inline AdmissionAnswer admit(const json& review) { return admit_pod(review.dump(), ViewSchema{}, {"gpu-scheduler"}, {}); }
inline AdmissionAnswer admit(const std::string& text) { return admit_pod(text, ViewSchema{}, {"gpu-scheduler"}, {}); }

// The answer's AdmissionResponse, checked to be allowed without a patch.
inline void check_unchanged(const AdmissionAnswer& a, const std::string& detail) {
  INFO(a.body);
  REQUIRE(a.status == 200);
  const json response = json::parse(a.body)["response"];
  CHECK(response["allowed"] == true);
  CHECK_FALSE(response.contains("patch"));
  CHECK_FALSE(response.contains("patchType"));
  CHECK_THAT(a.detail, Catch::Contains(detail));
}

inline json zone_term(const std::string& zone) {
  return {{"matchExpressions", {{{"key", "zone"}, {"operator", "In"}, {"values", {zone}}}}}};
}
inline json required_affinity(const json& terms) {
  return {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
}

}  // namespace pod_admission_support
