#pragma once
// WireDecoder's private state, shared by the decoder's translation units.
#include <string>

#include "object_decoders.h"

namespace gpu_extender {

struct WireDecoder::Impl {
  wire::od::parser parser;
  std::string padded_copy;  // used only when a body lacks padding room
  ExtenderArgs args;
  PreemptionArgs preemption;
  wire::PodScratch pod_scratch;
  // On Demand reads only what the policy needs and skips the rest by its brackets: a skipped `tru`,
  // `01` or `{"a" 1}` would pass. Every part of a body is also parsed whole by this validating parser,
  // a piece (a node, the pod) at a time, so that its tape stays small (a DOM of a 54 MB body at once
  // would take ~10 bytes a byte) and a body that is not JSON is a 400.
  simdjson::dom::parser validator;

  // Throws a DecodeError for `field` unless `bytes` (inside a padded buffer) are one valid JSON value.
  void validate(std::string_view bytes, const std::string& field) {
    auto result = validator.parse(bytes.data(), bytes.size(), false);
    if (result.error())
      throw DecodeError(field, std::string("not valid JSON: ") + simdjson::error_message(result.error()));
  }

  // Validates a body parsed from `body` (when it was copied for padding, from the copy).
  void validate_body(const std::string& body) {
    if (body.capacity() - body.size() >= simdjson::SIMDJSON_PADDING) return validate(body, "");
    validate(padded_copy, "");  // iterate() made it
  }

  // Starts parsing `body` in place when its capacity has room for the padding, else from a copy.
  simdjson::simdjson_result<wire::od::document> iterate(const std::string& body) {
    if (body.capacity() - body.size() >= simdjson::SIMDJSON_PADDING) {
      return parser.iterate(simdjson::padded_string_view(body.data(), body.size(), body.capacity()));
    }
    return iterate_copy(body);
  }
  simdjson::simdjson_result<wire::od::document> iterate_copy(std::string_view text) {
    padded_copy.reserve(text.size() + simdjson::SIMDJSON_PADDING);
    padded_copy.assign(text);
    return parser.iterate(simdjson::padded_string_view(padded_copy.data(), padded_copy.size(), padded_copy.capacity()));
  }
};

}  // namespace gpu_extender
