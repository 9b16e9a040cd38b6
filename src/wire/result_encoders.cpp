#include <algorithm>
#include <array>

#include "common/json_writer.h"
#include "gpu_extender/wire/wire_encode.h"

namespace gpu_extender {
namespace {

// How many verdicts of each fit there are, the bytes their names take (with quotes and a comma) and
// those of their reasons (JSON): every size the answer's parts are reserved by, from one pass.
struct FitCounts {
  std::array<size_t, 3> count{}, name_bytes{}, reason_bytes{};
  size_t count_of(Fit fit) const { return count[static_cast<size_t>(fit)]; }
  size_t name_bytes_of(Fit fit) const { return name_bytes[static_cast<size_t>(fit)]; }
  size_t reason_bytes_of(Fit fit) const { return reason_bytes[static_cast<size_t>(fit)]; }
};

FitCounts count_fits(const ExtenderArgs& args, std::span<const EncodedVerdict> verdicts) {
  FitCounts c;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const auto fit = static_cast<size_t>(verdicts[i].fit);
    ++c.count[fit];
    c.name_bytes[fit] += args.node_names[i].size() + 3;
    c.reason_bytes[fit] += verdicts[i].reason_json.size();
  }
  return c;
}

// The names of the nodes that passed, as a JSON array (its bytes are what /prioritize is sent next).
ByteRange append_passing_names(std::string& out, const ExtenderArgs& args, std::span<const EncodedVerdict> verdicts,
                               const FitCounts& counts) {
  ByteRange names{out.size(), 0};
  const size_t passing = counts.count_of(Fit::kPass);
  // Every node passed and the request's array was compact (no byte to spare for a space: its size is
  // that of the names, their quotes and the commas): the answer's array is those very bytes.
  if (args.names_verbatim && passing == verdicts.size() && passing > 0 &&
      args.node_names_json.size() == counts.name_bytes_of(Fit::kPass) + 1) {
    out += args.node_names_json;
    names.end = out.size();
    return names;
  }
  out.push_back('[');
  bool first = true;
  if (args.names_verbatim) {
    PresizedAppender append(out, counts.name_bytes_of(Fit::kPass));
    for (size_t i = 0; i < verdicts.size(); ++i) {
      if (verdicts[i].fit != Fit::kPass) continue;
      if (!first) append.put(',');
      first = false;
      append.put('"');
      append.put(args.node_names[i]);
      append.put('"');
    }
  } else {
    for (size_t i = 0; i < verdicts.size(); ++i) {
      if (verdicts[i].fit != Fit::kPass) continue;
      if (!first) out.push_back(',');
      first = false;
      append_json_string(out, args.node_names[i]);
    }
  }
  out.push_back(']');
  names.end = out.size();
  return names;
}

void append_failed_map(std::string& out, std::string_view key, const ExtenderArgs& args,
                       std::span<const EncodedVerdict> verdicts, Fit which, const FitCounts& counts) {
  out += ",\"";
  out += key;
  out += "\":{";
  bool first = true;
  if (counts.count_of(which) == 0) {
    // Nothing refused this way (a burst on a roomy cluster): no pass over the verdicts.
  } else if (args.names_verbatim) {
    // Each entry: the name with its quotes and a comma, a colon, the reason.
    PresizedAppender append(out, counts.name_bytes_of(which) + counts.count_of(which) + counts.reason_bytes_of(which));
    for (size_t i = 0; i < verdicts.size(); ++i) {
      if (verdicts[i].fit != which) continue;
      if (!first) append.put(',');
      first = false;
      append.put('"');
      append.put(args.node_names[i]);
      append.put("\":");
      append.put(verdicts[i].reason_json);
    }
  } else {
    for (size_t i = 0; i < verdicts.size(); ++i) {
      if (verdicts[i].fit != which) continue;
      if (!first) out.push_back(',');
      first = false;
      append_json_string(out, args.node_names[i]);
      out.push_back(':');
      out += verdicts[i].reason_json;
    }
  }
  out.push_back('}');
}

}  // namespace

ByteRange encode_filter_result(const ExtenderArgs& args, std::span<const EncodedVerdict> verdicts, std::string& out) {
  const FitCounts counts = count_fits(args, verdicts);
  const size_t reason_bytes = counts.reason_bytes_of(Fit::kResolvable) + counts.reason_bytes_of(Fit::kUnresolvable);
  if (args.full_mode) {
    size_t passing_bytes = 0;
    for (size_t i = 0; i < verdicts.size(); ++i)
      if (verdicts[i].fit == Fit::kPass) passing_bytes += args.nodes[i].raw_json.size() + 1;
    out.reserve(out.size() + passing_bytes + reason_bytes + 64 * verdicts.size() + 128);
    out += "{\"Nodes\":{\"metadata\":{},\"items\":[";
    bool first = true;
    for (size_t i = 0; i < verdicts.size(); ++i) {
      if (verdicts[i].fit != Fit::kPass) continue;
      if (!first) out.push_back(',');
      first = false;
      out += args.nodes[i].raw_json;
    }
    out += "]}";
  } else {
    // Names and reasons: one reservation instead of a dozen regrowths.
    out.reserve(out.size() + reason_bytes + 48 * verdicts.size() + 128);
    out += "{\"Nodes\":null";
  }
  out += ",\"NodeNames\":";
  const ByteRange names = append_passing_names(out, args, verdicts, counts);
  append_failed_map(out, "FailedNodes", args, verdicts, Fit::kResolvable, counts);
  append_failed_map(out, "FailedAndUnresolvableNodes", args, verdicts, Fit::kUnresolvable, counts);
  out += ",\"Error\":\"\"}";
  return names;
}

ByteRange encode_filter_result(const ExtenderArgs& args, std::span<const NodeVerdict> verdicts, std::string& out) {
  // All reasons escaped into one buffer first, then viewed (the buffer no longer moves). Thousands of
  // failing nodes share a handful of reasons: each of the last few distinct ones is escaped once.
  struct Escaped {
    std::string_view reason;
    ByteRange json;
  };
  std::array<Escaped, 8> recent{};
  size_t next_recent = 0;
  std::string reasons;
  std::vector<ByteRange> ranges(verdicts.size());
  for (size_t i = 0; i < verdicts.size(); ++i) {
    if (verdicts[i].passed()) continue;
    const std::string_view reason = verdicts[i].reason;
    const auto seen = std::find_if(recent.begin(), recent.end(), [&](const Escaped& e) {
      return e.json.end != 0 && e.reason == reason;
    });
    if (seen != recent.end()) {
      ranges[i] = seen->json;
      continue;
    }
    ranges[i].begin = reasons.size();
    append_json_string(reasons, reason);
    ranges[i].end = reasons.size();
    recent[next_recent++ % recent.size()] = {reason, ranges[i]};
  }
  std::vector<EncodedVerdict> encoded(verdicts.size());
  for (size_t i = 0; i < verdicts.size(); ++i)
    encoded[i] = {verdicts[i].fit, std::string_view(reasons).substr(ranges[i].begin, ranges[i].end - ranges[i].begin)};
  return encode_filter_result(args, encoded, out);
}

void encode_filter_error(std::string_view error, std::string& out) {
  out += "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":null,\"FailedAndUnresolvableNodes\":null,\"Error\":";
  append_json_string(out, error);
  out.push_back('}');
}

void encode_host_priorities(std::span<const std::string_view> hosts, std::span<const int64_t> scores,
                            std::string& out, bool hosts_verbatim) {
  constexpr std::string_view kHost = "{\"Host\":", kScore = ",\"Score\":";
  out.push_back('[');
  bool first = true;
  if (hosts_verbatim) {
    // The constant parts in two pieces around the name: up to 5,000 entries are written per request.
    constexpr std::string_view kBeforeHost = "{\"Host\":\"", kAfterHost = "\",\"Score\":";
    // Room for the entries listed, counted without a branch (a test per host cost more than the
    // bytes when the 0s are scattered).
    size_t bytes = 0;
    for (size_t i = 0; i < hosts.size(); ++i)
      bytes += static_cast<size_t>(scores[i] != 0) *
               (kBeforeHost.size() + hosts[i].size() + kAfterHost.size() + PresizedAppender::kMaxIntBytes + 2);
    PresizedAppender append(out, bytes);
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (scores[i] == 0) continue;
      if (!first) append.put(',');
      first = false;
      append.put(kBeforeHost);
      append.put(hosts[i]);
      append.put(kAfterHost);
      if (scores[i] > 0 && scores[i] <= 9) append.put(static_cast<char>('0' + scores[i]));  // most scores
      else append.put_int(scores[i]);
      append.put('}');
    }
  } else {
    out.reserve(out.size() + hosts.size() * 48 + 2);  // capacity only: nothing is filled
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (scores[i] == 0) continue;
      if (!first) out.push_back(',');
      first = false;
      out += kHost;
      append_json_string(out, hosts[i]);
      out += kScore;
      append_json_int(out, scores[i]);
      out.push_back('}');
    }
  }
  out.push_back(']');
}

void encode_error_object(std::string_view error, std::string& out) {
  out += "{\"Error\":";
  append_json_string(out, error);
  out.push_back('}');
}

}  // namespace gpu_extender
