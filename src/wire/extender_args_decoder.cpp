// Decoding ExtenderArgs: {"Pod":{...},"Nodes":{"metadata":{},"items":[...]}|null,"NodeNames":[...]|null}
#include <functional>

#include "decoder_impl.h"
#include "common/case_insensitive.h"
#include "names_body_scanner.h"

namespace gpu_extender {

static_assert(kJsonPadding == simdjson::SIMDJSON_PADDING, "kJsonPadding must match simdjson's padding");

WireDecoder::WireDecoder() : impl_(std::make_unique<Impl>()) {}
WireDecoder::~WireDecoder() = default;

bool WireDecoder::release_buffers_above(size_t keep_bytes) {
  bool released = false;
  // The parser's index is allocated for its capacity but only touched where a body had structure:
  // a realistic 54 MB node list touches ~30 MB of it, a body of small numbers five times its size.
  // Freeing it costs the next request ~17 ms of page faults, so only an index that was used densely
  // is freed.
  const size_t index_bytes_used = impl_->last_values * 8;
  if (impl_->parser.capacity() > keep_bytes && index_bytes_used > keep_bytes) {
    impl_->parser = wire::od::parser{};
    released = true;
  }
  if (impl_->padded_copy.capacity() > keep_bytes) {
    std::string().swap(impl_->padded_copy);
    released = true;
  }
  return released;
}

namespace {

using namespace wire;

// Kubernetes supports clusters of up to 5,000 nodes. A request naming many more is not a cluster but
// an attempt on the extender's memory (64 MB of nodes that carry only a name: millions of them, each
// a NodeView, a verdict and a reason): refused before the per-node state grows.
void check_node_count(size_t index, std::string_view field) {
  if (index >= kMaxNodesPerRequest)
    throw DecodeError(std::string(field), "more than " + std::to_string(kMaxNodesPerRequest) +
                                              " nodes (Kubernetes supports clusters of up to 5,000)");
}

void decode_extender_nodes(od::document& doc, od::value nodes, const ViewSchema& schema, ExtenderArgs& args) {
  for (auto f : take_object(nodes, "Nodes")) {
    std::string_view key = field_key(f, "Nodes");
    if (!equals_ignore_case(key, "items")) {
      const std::string field = "Nodes." + std::string(key);
      validate_value(take(f.value(), field, "a value"), field);
      continue;
    }
    od::value items = take(f.value(), "Nodes.items", "an array");
    if (take_null(items, "Nodes.items")) continue;
    size_t index = 0;
    for (auto item : take(items.get_array(), "Nodes.items", "an array")) {
      check_node_count(index, "Nodes.items");
      NodeView& node = args.nodes.emplace_back();
      try {
        od::value v = take(item, "", "a node object");
        const char* start = v.raw_json_token().data();
        decode_node(v, schema, node);  // validates what it does not read
        const char* next = take(doc.current_location(), "", "more JSON after the node");
        node.raw_json = value_bytes(start, next);
      } catch (DecodeError& e) {
        throw e.within("Nodes.items[" + std::to_string(index) + "]");
      }
      ++index;
    }
  }
}

std::string indexed(std::string_view field, size_t index) {
  return std::string(field) + "[" + std::to_string(index) + "]";
}

// A node name as a view into the body when it has no escapes (node names are DNS names: always),
// else unescaped by simdjson. Saves copying 5,000 names into the parser's string buffer, and lets the
// answer copy them back as they came (`verbatim`).
std::string_view node_name(od::value item, size_t index, bool& verbatim) {
  std::string_view name;
  bool in_place = false;
  if (auto error = read_string(item, name, in_place)) throw_json_error(indexed("NodeNames", index), error, "a string");
  verbatim = verbatim && in_place;
  return name;
}

void decode_node_names(od::value names, ExtenderArgs& args) {
  size_t index = 0;
  args.names_verbatim = true;
  // Field names for errors are built only on an error: 5,000 names must not cost 5,000 strings.
  for (auto result : take(names.get_array(), "NodeNames", "an array of node names")) {
    check_node_count(index, "NodeNames");
    od::value item;
    if (auto error = std::move(result).get(item)) throw_json_error(indexed("NodeNames", index), error, "a string");  // NOLINT(performance-move-const-arg)
    args.node_names.push_back(node_name(item, index, args.names_verbatim));
    ++index;
  }
}

void reset(ExtenderArgs& args) {
  args.pod = PodRequest{};
  args.full_mode = false;
  args.names_verbatim = false;
  args.node_names_json = {};
  args.nodes.clear();
  args.node_names.clear();
  validated_values = 0;
}

}  // namespace

// Names mode's plain body: the scanner reads the names, simdjson only the Pod. False (and args to be
// reset) when the body is not plain or its Pod is not valid: the general decoder then reads it all and
// reports the error as it always does.
bool WireDecoder::Impl::decode_plain_names_body(const std::string& body, const ViewSchema& schema) {
  if (body.capacity() - body.size() < simdjson::SIMDJSON_PADDING) return false;
  const char* readable_end = body.data() + body.capacity();
  wire::PlainNamesBody plain{{}, &args.node_names, {}};
  if (!wire::scan_plain_names_body(body, readable_end, plain)) return false;
  try {
    // The Pod's bytes are followed by the rest of the body and its padding: room enough for simdjson,
    // whose first pass copies the last partial block and never reads the bytes after it as JSON.
    const auto room = static_cast<size_t>(readable_end - plain.pod.data());
    wire::od::document doc = wire::take(parser.iterate(simdjson::padded_string_view(plain.pod.data(), plain.pod.size(), room)), "",
                            "a JSON object");
    wire::decode_extender_pod(wire::take(doc.get_object(), "Pod", "an object"), schema, args.pod, pod_scratch);
    wire::reject_trailing_content(doc);
  } catch (const DecodeError&) {
    return false;
  }
  args.names_verbatim = true;
  args.node_names_json = plain.names_json;
  last_values = validated_values;
  return true;
}

ExtenderArgs& WireDecoder::decode_extender_args(const std::string& body, const ViewSchema& schema) {
  ExtenderArgs& args = impl_->args;
  reset(args);
  if (impl_->decode_plain_names_body(body, schema)) return args;
  reset(args);
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  bool seen_pod = false, seen_nodes = false, seen_names = false, has_nodes = false, has_names = false;
  auto once = [](bool& seen, std::string_view name) {
    if (seen) throw DecodeError(std::string(name), "duplicate key");
    seen = true;
  };
  for (auto f : take(doc.get_object(), "", "a JSON object (ExtenderArgs)")) {
    std::string_view key = field_key(f, "");
    if (equals_ignore_case(key, "Pod")) {
      decode_extender_pod(take(f.value(), "Pod", "an object"), seen_pod, schema, args.pod, impl_->pod_scratch);
    } else if (equals_ignore_case(key, "Nodes")) {
      once(seen_nodes, "Nodes");
      od::value nodes = take(f.value(), "Nodes", "an object");
      if (take_null(nodes, "Nodes")) continue;
      has_nodes = true;
      decode_extender_nodes(doc, nodes, schema, args);
    } else if (equals_ignore_case(key, "NodeNames")) {
      once(seen_names, "NodeNames");
      od::value names = take(f.value(), "NodeNames", "an array");
      if (take_null(names, "NodeNames")) continue;
      has_names = true;
      decode_node_names(names, args);
    } else {
      // Other keys are ignored, as Go's decoder ignores unknown fields; but they must be JSON.
      validate_value(take(f.value(), key, "a value"), key);
    }
  }
  wire::reject_trailing_content(doc);
  impl_->last_values = validated_values;
  if (!seen_pod) throw DecodeError("Pod", "missing");
  if (!has_nodes && !has_names) throw DecodeError("Nodes", "neither Nodes nor NodeNames is given");
  // The scheduler sends exactly one of the two. Given both, answer in full mode: its answer carries
  // both the node objects and their names.
  args.full_mode = has_nodes;
  if (has_nodes) {
    // A name read in place (it lies in the parsed bytes: it had no escapes) is its own JSON encoding.
    const std::string_view parsed = impl_->parsed;
    const std::less<const char*> before;
    auto in_body = [&](std::string_view name) {
      return !before(name.data(), parsed.data()) && !before(parsed.data() + parsed.size(), name.data() + name.size());
    };
    args.names_verbatim = true;
    args.node_names.clear();
    for (const NodeView& n : args.nodes) {
      args.node_names.push_back(n.name);
      args.names_verbatim = args.names_verbatim && in_body(n.name);
    }
  }
  return args;
}

}  // namespace gpu_extender
