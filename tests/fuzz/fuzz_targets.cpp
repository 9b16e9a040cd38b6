// Each target decodes arbitrary bytes as one kind of input and, when that succeeds, runs what the
// server would run on it. Any crash, sanitizer report or broken invariant (abort) is a finding.
#include "fuzz_targets.h"

#include <simdjson.h>

#include <cstdlib>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "gpu_extender/policy/policy.h"
#include "gpu_extender/common/quantity.h"
#include "gpu_extender/wire/wire.h"
#include "gpu_extender/wire/wire_encode.h"
#include "server/admission/json_depth.h"
#include "server/admission/pod_admission.h"

namespace fuzz {
namespace {

using namespace gpu_extender;

std::string padded(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  body.reserve(size + kJsonPadding);
  return body;
}

// Whether simdjson's validating parser takes `text` as JSON (nesting allowed deeper than the decoder's
// own bound, which is relative to the field it validates).
bool is_json(const std::string& text) {
  static simdjson::dom::parser dom;
  if (dom.allocate(text.size() + 64, 4096)) std::abort();
  simdjson::padded_string copy(text);
  return dom.parse(copy).error() == simdjson::SUCCESS;
}

const std::shared_ptr<const Policy>& policy_under_test() {
  static const std::shared_ptr<const Policy> p = Policy::build(default_policy_config());
  return p;
}

// What a decoder makes of `body`: the error, or the pod and the node names (as text, to compare).
std::string extender_args_outcome(const std::string& body) {
  WireDecoder decoder;
  try {
    const ExtenderArgs& args = decoder.decode_extender_args(body, policy_under_test()->schema());
    std::string out = std::string(args.pod.ns) + "/" + std::string(args.pod.name) + "/" + std::string(args.pod.uid) +
                      "/" + args.pod.invalid_reason + "/" + std::to_string(args.pod.requests.present) +
                      (args.full_mode ? "/full" : "/names") + (args.names_verbatim ? "/verbatim" : "");
    for (size_t i = 0; i < kMaxTrackedResources; ++i) out += "," + std::to_string(args.pod.requests.milli[i]);
    for (std::string_view n : args.node_names) out += "\n" + std::string(n);
    return out;
  } catch (const DecodeError& e) {
    return std::string("error ") + e.what();
  }
}

// RFC 4648 base64 (the admission patch's encoding); nullopt on anything else.
std::optional<std::string> from_base64(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=' && i + 2 >= text.size()) continue;
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if (++count % 4 == 0) {
      out += static_cast<char>(bits >> 16);
      out += static_cast<char>(bits >> 8);
      out += static_cast<char>(bits);
      bits = 0;
    }
  }
  if (count % 4 == 2) out += static_cast<char>(bits >> 4);
  if (count % 4 == 3) {
    out += static_cast<char>(bits >> 10);
    out += static_cast<char>(bits >> 2);
  }
  return out;
}

const admission::SeenValues& seen_values() {
  static const admission::SeenValues seen = {{"nvidia.com/gpu.product", {"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-40GB"}},
                                             {"gpu.nvidia.com/model", {"H100", "A100"}}};
  return seen;
}

admission::AdmissionAnswer admit(const std::string& review) {
  return admission::admit_pod(review, policy_under_test()->schema(), {"gpu-scheduler"}, seen_values());
}

// Whether a node selector term has a requirement (Kubernetes: one without matches no node).
bool has_requirements(const nlohmann::json& term) {
  if (!term.is_object()) return false;
  for (const char* key : {"matchExpressions", "matchFields"})
    if (term.contains(key) && term[key].is_array() && !term[key].empty()) return true;
  return false;
}

const nlohmann::json* required_terms(const nlohmann::json& pod) {
  const nlohmann::json::json_pointer at("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms");
  return pod.contains(at) ? &pod.at(at) : nullptr;
}

}  // namespace

int extender_args(const uint8_t* data, size_t size) {
  const std::string body = padded(data, size);
  // Names mode's fast path runs only on a body with padding room: the same bytes without it take the
  // general path, and both must say the same.
  if (extender_args_outcome(body) != extender_args_outcome(std::string(body.data(), body.size()))) std::abort();
  WireDecoder decoder;
  try {
    const ExtenderArgs& args = decoder.decode_extender_args(body, policy_under_test()->schema());
    if (!is_json(body)) std::abort();  // a body that is not JSON must be a 400, wherever the fault is
    std::vector<NodeInput> inputs;
    for (const NodeView& n : args.nodes) inputs.push_back({&n, std::nullopt});
    std::vector<NodeVerdict> verdicts;
    policy_under_test()->filter(args.pod, inputs, verdicts);
    ScoreSheet sheet;
    policy_under_test()->score(args.pod, inputs, sheet);
    for (int64_t score : sheet.final)
      if (score < 0 || score > 10) std::abort();  // the protocol's range, whatever the input
    if (args.full_mode) {
      std::string out;
      encode_filter_result(args, verdicts, out);
      if (!is_json(out)) std::abort();  // the answer echoes node bytes: it must be JSON
    }
  } catch (const DecodeError&) {
  }
  return 0;
}

int binding_args(const uint8_t* data, size_t size) {
  WireDecoder decoder;
  try {
    decoder.decode_binding_args(padded(data, size));
  } catch (const DecodeError&) {
  }
  return 0;
}

int preemption_args(const uint8_t* data, size_t size) {
  WireDecoder decoder;
  try {
    const std::string body = padded(data, size);  // the args' views point into it
    const PreemptionArgs& args = decoder.decode_preemption_args(body, policy_under_test()->schema());
    std::string out;
    encode_preemption_result(args, std::vector<bool>(args.candidates.size(), true), out);
  } catch (const DecodeError&) {
  }
  return 0;
}

int watch_event(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  WireDecoder decoder;
  PodRequest pod;
  NodeView node;
  try {
    decoder.decode_event<PodRequest>(line, policy_under_test()->schema(), pod);
  } catch (const DecodeError&) {
  }
  try {
    decoder.decode_event<NodeView>(line, policy_under_test()->schema(), node);
  } catch (const DecodeError&) {
  }
  return 0;
}

int quantity(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const QuantityParse q = parse_quantity(text);
  if (q.milli) {
    // Formatting a parsed value and parsing it again gives the same value.
    const QuantityParse again = parse_quantity(format_milli(*q.milli));
    if (!again.milli || *again.milli != *q.milli) std::abort();
  } else if (q.error.empty()) {
    std::abort();  // a refusal always says why
  }
  (void)parse_mebibytes(text);
  return 0;
}

int policy(const uint8_t* data, size_t size) {
  try {
    Policy::build(parse_policy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz"));
  } catch (const PolicyError&) {
  }
  return 0;
}

// The admission webhook on any bytes: a 400 with an Error, or a 200 AdmissionReview answering the
// request's uid; never an exception, whatever the nesting. A patch is only ever for a pod's CREATE,
// applies cleanly to the object, keeps each own term without requirements as it is, stays within
// kMaxTerms, and a second review of the patched pod changes nothing. A dry run gets the same answer.
int admission_review(const uint8_t* data, size_t size) {
  using nlohmann::json;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const admission::AdmissionAnswer answer = admit(text);
  if (answer.detail.empty()) std::abort();
  const json body = json::parse(answer.body, nullptr, false);  // the answer is shallow: our own shape
  if (body.is_discarded() || !body.is_object()) std::abort();
  if (answer.status == 400) {
    if (!body.contains("Error") || !body["Error"].is_string() || body["Error"].get<std::string>().empty()) std::abort();
    return 0;
  }
  if (answer.status != 200) std::abort();
  // A 200 means the review was JSON within the depth bound: safe to parse here too.
  if (admission::json_nests_deeper_than(text, admission::kMaxReviewDepth)) std::abort();
  const json review = json::parse(text);
  const json& request = review.at("request");
  const json& response = body.at("response");
  if (body.value("kind", "") != "AdmissionReview" || response.at("uid") != request.at("uid") ||
      !response.at("allowed").is_boolean())
    std::abort();
  if (response["allowed"] == false && (!response.contains("status") || response["status"].value("code", 0) != 400))
    std::abort();
  // A dry run: the same answer.
  json dry = review;
  dry["request"]["dryRun"] = !(request.contains("dryRun") && request["dryRun"] == true);
  if (admit(dry.dump()).body != answer.body) std::abort();
  if (!response.contains("patch")) return 0;
  if (response.value("patchType", "") != "JSONPatch" || response["allowed"] != true) std::abort();
  auto text_of = [&](const char* key, const char* absent) {  // null is absent, as the webhook reads it
    return request.contains(key) && request[key].is_string() ? request[key].get<std::string>() : std::string(absent);
  };
  if (text_of("operation", "CREATE") != "CREATE" || !text_of("subResource", "").empty()) std::abort();
  const std::optional<std::string> patch_text = from_base64(response["patch"].get<std::string>());
  if (!patch_text) std::abort();
  const json patch = json::parse(*patch_text, nullptr, false);
  if (!patch.is_array()) std::abort();
  const json& pod = request.at("object");
  json patched;
  try {
    patched = pod.patch(patch);
  } catch (const json::exception&) {
    std::abort();  // a patch the API server could not apply
  }
  const json* terms = required_terms(patched);
  if (terms == nullptr || !terms->is_array() || terms->empty() || terms->size() > admission::kMaxTerms) std::abort();
  // Each own term without requirements is in the result as it was; every other result term has one.
  const json* own = required_terms(pod);
  size_t own_empty = 0, result_empty = 0;
  if (own != nullptr && own->is_array())
    for (const json& term : *own) own_empty += !has_requirements(term);
  for (const json& term : *terms) result_empty += !has_requirements(term);
  if (own_empty != result_empty || result_empty == terms->size()) std::abort();
  // Done once: reviewing the patched pod changes nothing.
  json again = review;
  again["request"]["object"] = patched;
  const admission::AdmissionAnswer second = admit(again.dump());
  if (second.status != 200 || json::parse(second.body)["response"].contains("patch")) std::abort();
  return 0;
}

}  // namespace fuzz
