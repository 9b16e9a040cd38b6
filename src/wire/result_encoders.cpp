#include "gpu_extender/json_writer.h"
#include "gpu_extender/wire_encode.h"

namespace gpu_extender {
namespace {

void append_failed_map(std::string& out, std::string_view key, const ExtenderArgs& args,
                       std::span<const NodeVerdict> verdicts, Fit which) {
  out += ",\"";
  out += key;
  out += "\":{";
  bool first = true;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    if (verdicts[i].fit != which) continue;
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, args.node_names[i]);
    out.push_back(':');
    append_json_string(out, verdicts[i].reason);
  }
  out.push_back('}');
}

}  // namespace

void encode_filter_result(const ExtenderArgs& args, std::span<const NodeVerdict> verdicts, std::string& out) {
  if (args.full_mode) {
    size_t passing_bytes = 0;
    for (size_t i = 0; i < verdicts.size(); ++i)
      if (verdicts[i].passed()) passing_bytes += args.nodes[i].raw_json.size() + 1;
    out.reserve(out.size() + passing_bytes + 64 * verdicts.size() + 128);
    out += "{\"Nodes\":{\"metadata\":{},\"items\":[";
    bool first = true;
    for (size_t i = 0; i < verdicts.size(); ++i) {
      if (!verdicts[i].passed()) continue;
      if (!first) out.push_back(',');
      first = false;
      out += args.nodes[i].raw_json;
    }
    out += "]}";
  } else {
    // Names and reasons: about 64 bytes a node; one reservation instead of a dozen regrowths.
    out.reserve(out.size() + 64 * verdicts.size() + 128);
    out += "{\"Nodes\":null";
  }
  out += ",\"NodeNames\":[";
  bool first = true;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    if (!verdicts[i].passed()) continue;
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, args.node_names[i]);
  }
  out.push_back(']');
  append_failed_map(out, "FailedNodes", args, verdicts, Fit::kResolvable);
  append_failed_map(out, "FailedAndUnresolvableNodes", args, verdicts, Fit::kUnresolvable);
  out += ",\"Error\":\"\"}";
}

void encode_filter_error(std::string_view error, std::string& out) {
  out += "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":null,\"FailedAndUnresolvableNodes\":null,\"Error\":";
  append_json_string(out, error);
  out.push_back('}');
}

void encode_host_priorities(std::span<const std::string_view> hosts, std::span<const int64_t> scores,
                            std::string& out) {
  out.reserve(out.size() + hosts.size() * 48 + 2);
  out.push_back('[');
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i) out.push_back(',');
    out += "{\"Host\":";
    append_json_string(out, hosts[i]);
    out += ",\"Score\":";
    append_json_int(out, scores[i]);
    out.push_back('}');
  }
  out.push_back(']');
}

void encode_error_object(std::string_view error, std::string& out) {
  out += "{\"Error\":";
  append_json_string(out, error);
  out.push_back('}');
}

}  // namespace gpu_extender
