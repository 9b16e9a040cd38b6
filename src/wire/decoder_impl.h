#pragma once
// WireDecoder's private state, shared by the decoder's translation units.
#include <string>
#include <string_view>

#include "object_decoders.h"

namespace gpu_extender {

struct WireDecoder::Impl {
  wire::od::parser parser;
  std::string padded_copy;  // used only when a body lacks padding room
  ExtenderArgs args;
  PreemptionArgs preemption;
  wire::PodScratch pod_scratch;
  size_t last_values = 0;  // values the last extender body held (see release_buffers_above)
  std::string_view parsed;  // the bytes the last iterate() parses: the body, or its padded copy
  bool decode_plain_names_body(const std::string& body, const ViewSchema& schema);
  // Starts parsing `body` in place when its capacity has room for the padding, else from a copy.
  simdjson::simdjson_result<wire::od::document> iterate(const std::string& body) {
    if (body.capacity() - body.size() >= simdjson::SIMDJSON_PADDING) {
      parsed = body;
      return parser.iterate(simdjson::padded_string_view(body.data(), body.size(), body.capacity()));
    }
    return iterate_copy(body);
  }
  simdjson::simdjson_result<wire::od::document> iterate_copy(std::string_view text) {
    padded_copy.reserve(text.size() + simdjson::SIMDJSON_PADDING);
    padded_copy.assign(text);
    parsed = padded_copy;
    return parser.iterate(simdjson::padded_string_view(padded_copy.data(), padded_copy.size(), padded_copy.capacity()));
  }
};

}  // namespace gpu_extender
