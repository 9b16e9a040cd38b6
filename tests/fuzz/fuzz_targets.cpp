// Each target decodes arbitrary bytes as one kind of input and, when that succeeds, runs what the
// server would run on it. Any crash, sanitizer report or broken invariant (abort) is a finding.
#include "fuzz_targets.h"

#include <simdjson.h>

#include <cstdlib>
#include <string>

#include "gpu_extender/policy/policy.h"
#include "gpu_extender/common/quantity.h"
#include "gpu_extender/wire/wire.h"
#include "gpu_extender/wire/wire_encode.h"

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
    decoder.decode_pod_event(line, policy_under_test()->schema(), pod);
  } catch (const DecodeError&) {
  }
  try {
    decoder.decode_node_event(line, policy_under_test()->schema(), node);
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

}  // namespace fuzz
