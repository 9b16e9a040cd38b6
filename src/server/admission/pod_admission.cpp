// The pod admission webhook: see pod_admission.h.
#include "server/admission/pod_admission.h"

#include <openssl/evp.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "gpu_extender/wire/wire.h"
#include "server/admission/json_depth.h"

namespace gpu_extender::admission {
namespace {
using nlohmann::json;

// A field of the review missing or of the wrong type: the review is a 400 whose Error is what().
struct FieldError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Text for the wire: a message may quote bytes of the review (a parse error's last token) or cut a
// value short, which would not be UTF-8; dump() would throw on them, so they are replaced instead.
std::string to_text(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// A member of `object` (which is one), null when absent: Go's decoder, which made the review, reads an
// absent field and a null one alike.
const json& member(const json& object, const char* key) {
  static const json kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// `value` at `path`, which must be null (absent) or of the type `is` tests.
const json& typed(const json& value, const std::string& path, bool (json::*is)() const noexcept, const char* type) {
  if (!value.is_null() && !(value.*is)()) throw FieldError(path + ": not " + type);
  return value;
}
const json& object_at(const json& parent, const char* key, const std::string& path) {
  return typed(member(parent, key), path, &json::is_object, "an object");
}
const json& array_at(const json& parent, const char* key, const std::string& path) {
  return typed(member(parent, key), path, &json::is_array, "an array");
}
std::string string_at(const json& parent, const char* key, const std::string& path, std::string absent = "") {
  const json& value = typed(member(parent, key), path, &json::is_string, "a string");
  return value.is_null() ? absent : value.get<std::string>();
}

// Whether request.kind (or request.resource, with `name` "resource"), when given, says core v1 `expected`.
bool is_core_v1(const json& request, const char* field, const char* name, const char* expected, std::string& said) {
  const std::string path = std::string("request.") + field;
  const json& gvk = object_at(request, field, path);
  if (gvk.is_null()) return true;
  const std::string group = string_at(gvk, "group", path + ".group");
  const std::string version = string_at(gvk, "version", path + ".version");
  const std::string value = string_at(gvk, name, path + "." + name);
  said = std::string(field) + " " + (group.empty() ? "" : group + "/") + version + " " + value;
  return group.empty() && version == "v1" && value == expected;
}

json requirement_json(const Requirement& r) { return {{"key", r.key}, {"operator", r.op}, {"values", r.values}}; }

// The pod's own required node affinity: whether it has one (spec.affinity.nodeAffinity.
// requiredDuringSchedulingIgnoredDuringExecution set), and its terms.
struct OwnAffinity {
  bool required = false;
  std::vector<const json*> terms;  // each an object or null
  size_t empty = 0;                // terms with no requirement: each matches no node
};

bool has_requirements(const json& term) {
  if (term.is_null()) return false;
  const json& expressions = member(term, "matchExpressions");
  const json& fields = member(term, "matchFields");
  return (expressions.is_array() && !expressions.empty()) || (fields.is_array() && !fields.empty());
}

OwnAffinity own_affinity(const json& spec) {
  OwnAffinity own;
  std::string path = "request.object.spec.affinity";
  const json& affinity = object_at(spec, "affinity", path);
  if (affinity.is_null()) return own;
  const json& node_affinity = object_at(affinity, "nodeAffinity", path += ".nodeAffinity");
  if (node_affinity.is_null()) return own;
  const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
  const json& required = object_at(node_affinity, kRequired, path += std::string(".") + kRequired);
  if (required.is_null()) return own;
  own.required = true;
  path += ".nodeSelectorTerms";
  const json& terms = array_at(required, "nodeSelectorTerms", path);
  if (terms.is_null()) return own;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const json& term = typed(terms[i], at, &json::is_object, "an object");
    if (!term.is_null()) {
      array_at(term, "matchExpressions", at + ".matchExpressions");
      array_at(term, "matchFields", at + ".matchFields");
    }
    own.terms.push_back(&term);
    own.empty += !has_requirements(term);
  }
  return own;
}

// The terms that replace the pod's own: each own term with requirements ANDed with each vocabulary's
// term; an own term without any kept as it is (it matches no node, and must go on matching none).
// Without required affinity of its own, the vocabularies' terms alone.
json combined_terms(const OwnAffinity& own, const std::vector<Term>& gpu_terms) {
  json out = json::array();
  static const json kNoTerm = json::object();
  const std::vector<const json*> unconstrained = {&kNoTerm};
  for (const json* mine : own.required ? own.terms : unconstrained) {
    if (own.required && !has_requirements(*mine)) {
      out.push_back(*mine);
      continue;
    }
    for (const Term& term : gpu_terms) {
      json combined = *mine;
      json& expressions = combined["matchExpressions"];
      if (!expressions.is_array()) expressions = json::array();
      for (const Requirement& r : term) expressions.push_back(requirement_json(r));
      out.push_back(std::move(combined));
    }
  }
  return out;
}

// The JSON Patch that puts `terms` in place of the pod's required node affinity terms and marks it done.
json patch_for(const json& spec, const json& metadata, const json& terms) {
  json patch = json::array();
  const json required = {{"nodeSelectorTerms", terms}};
  const json& affinity = member(spec, "affinity");
  const json& node_affinity = affinity.is_object() ? member(affinity, "nodeAffinity") : affinity;
  const json& own_required = node_affinity.is_object()
                                 ? member(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
                                 : node_affinity;
  if (!affinity.is_object()) {
    patch.push_back({{"op", "add"}, {"path", "/spec/affinity"}, {"value", {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", required}}}}}});
  } else if (!node_affinity.is_object()) {
    patch.push_back({{"op", "add"}, {"path", "/spec/affinity/nodeAffinity"}, {"value", {{"requiredDuringSchedulingIgnoredDuringExecution", required}}}});
  } else if (!own_required.is_object()) {
    patch.push_back({{"op", "add"}, {"path", "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"}, {"value", required}});
  } else {
    patch.push_back({{"op", "add"}, {"path", "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms"}, {"value", terms}});
  }
  const json annotation = {{kAddedAnnotation, "true"}};
  if (!metadata.is_object())
    patch.push_back({{"op", "add"}, {"path", "/metadata"}, {"value", {{"annotations", annotation}}}});
  else if (!member(metadata, "annotations").is_object())
    patch.push_back({{"op", "add"}, {"path", "/metadata/annotations"}, {"value", annotation}});
  else
    patch.push_back({{"op", "add"}, {"path", "/metadata/annotations/gpu.nvidia.com~1node-affinity-added"}, {"value", "true"}});
  return patch;
}

AdmissionAnswer refuse_review(const std::string& why) { return {400, to_text({{"Error", why}}), why}; }

AdmissionAnswer answer_review(const json& review, const ViewSchema& schema,
                              const std::vector<std::string>& scheduler_names, const SeenValues& seen) {
  const char* kExpected = " (an admission.k8s.io/v1 AdmissionReview is expected)";
  if (!review.is_object()) return refuse_review(std::string("request: missing") + kExpected);
  const json& request = object_at(review, "request", "request");
  if (request.is_null()) return refuse_review(std::string("request: missing") + kExpected);
  const json& uid = typed(member(request, "uid"), "request.uid", &json::is_string, "a string");
  if (uid.is_null()) return refuse_review("request.uid: missing");
  // The API server always sends operation, kind and resource; a review without them (a test's client)
  // is taken as a pod's creation, as before they were read.
  const std::string operation = string_at(request, "operation", "request.operation", "CREATE");
  std::string kind, resource;
  const bool pod_kind = is_core_v1(request, "kind", "kind", "Pod", kind);
  const bool pod_resource = is_core_v1(request, "resource", "resource", "pods", resource);
  const std::string subresource = string_at(request, "subResource", "request.subResource");

  json response = {{"uid", uid}, {"allowed", true}};
  AdmissionAnswer answer;
  auto finish = [&](std::string detail) {
    answer.detail = std::move(detail);
    answer.body = to_text({{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}});
    return answer;
  };
  // What is not a pod's creation is let through as it is, before its object is read: a DELETE has none.
  if (operation != "CREATE")
    return finish("operation " + operation +
                  ": unchanged (only CREATE is mutated: a pod's affinity cannot change once it exists)");
  if (!pod_kind) return finish("not a core v1 Pod (" + kind + "): unchanged");
  if (!pod_resource) return finish("not core v1 pods (" + resource + "): unchanged");
  if (!subresource.empty()) return finish("subresource " + subresource + ": unchanged");

  const json& pod = typed(member(request, "object"), "request.object", &json::is_object, "an object");
  if (pod.is_null()) return refuse_review("request.object: missing");
  const json& spec = object_at(pod, "spec", "request.object.spec");
  if (spec.is_null()) return refuse_review("request.object.spec: missing");
  const json& metadata = object_at(pod, "metadata", "request.object.metadata");

  const std::string scheduler = string_at(spec, "schedulerName", "request.object.spec.schedulerName", "default-scheduler");
  if (std::find(scheduler_names.begin(), scheduler_names.end(), scheduler) == scheduler_names.end())
    return finish("not a pod of --scheduler-name (" + scheduler + "): unchanged");
  const json& annotations =
      metadata.is_null() ? metadata : object_at(metadata, "annotations", "request.object.metadata.annotations");
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
  const OwnAffinity own = own_affinity(spec);
  const size_t with_requirements = own.terms.size() - own.empty;
  if (own.required && with_requirements == 0)
    return finish("the pod's own required node affinity has no term with a requirement, so matches no node: unchanged");
  const size_t count = own.empty + std::max<size_t>(with_requirements, 1) * terms.size();
  if (count > kMaxTerms) {
    response["warnings"] = {"gpu-extender: the pod's " + std::to_string(with_requirements) +
                            " node affinity terms times the GPU's " + std::to_string(terms.size()) +
                            " would make more than " + std::to_string(kMaxTerms) + "; no GPU affinity added"};
    return finish("too many terms: unchanged");
  }
  response["patchType"] = "JSONPatch";
  response["patch"] = base64(to_text(patch_for(spec, metadata, combined_terms(own, terms))));
  return finish("added " + std::to_string(count) + " node affinity term(s)");
}

}  // namespace

AdmissionAnswer admit_pod(const std::string& review_text, const ViewSchema& schema,
                          const std::vector<std::string>& scheduler_names, const SeenValues& seen) {
  // Before parsing: no tree deeper than the limit is ever built, so nothing below recurses further.
  if (json_nests_deeper_than(review_text, kMaxReviewDepth))
    return refuse_review("AdmissionReview: JSON nested more than " + std::to_string(kMaxReviewDepth) + " deep");
  json review;
  try {
    review = json::parse(review_text);
  } catch (const json::exception& e) {
    return refuse_review(std::string("AdmissionReview: not valid JSON: ") + e.what());
  }
  try {
    return answer_review(review, schema, scheduler_names, seen);
  } catch (const FieldError& e) {
    return refuse_review(e.what());
  } catch (const json::exception& e) {
    // A read of a field the checks above do not name (none is known): still the review's fault, not ours.
    return refuse_review(std::string("AdmissionReview: ") + e.what());
  }
}

}  // namespace gpu_extender::admission
