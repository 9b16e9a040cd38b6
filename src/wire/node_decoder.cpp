// Decoding a Node: its GPU labels, capacity and allocatable; everything else validated and skipped.
#include <algorithm>

#include "object_decoders.h"

#include "common/case_insensitive.h"
#include "gpu_extender/common/quantity.h"

namespace gpu_extender::wire {
namespace {

// The GPU facts of a node's labels: each from the first of its labels (in the schema's order of
// precedence) that the node carries; its topology labels by level. Other labels are validated and skipped.
void decode_node_labels(od::value map, const ViewSchema& schema, NodeView& out) {
  struct Fact {
    const std::vector<std::string>* labels;
    std::optional<std::string_view>* value;
    uint8_t* source;
  };
  const std::array<Fact, 5> facts{{{&schema.node_gpu_model_labels, &out.gpu_model, &out.gpu_model_label},
                                   {&schema.node_gpu_memory_labels, &out.gpu_memory, &out.gpu_memory_label},
                                   {&schema.node_gpu_count_labels, &out.gpu_count, &out.gpu_count_label},
                                   {&schema.node_gpu_family_labels, &out.gpu_family, &out.gpu_family_label},
                                   {&schema.node_gpu_replicas_labels, &out.gpu_replicas, &out.gpu_replicas_label}}};
  // The lengths of the label names read, as bits (every length from 63 up shares bit 63): a node
  // carries dozens of labels, and most are rejected on their length alone.
  auto length_bit = [](size_t length) { return uint64_t{1} << std::min<size_t>(length, 63); };
  uint64_t wanted_lengths = 0;
  for (const Fact& fact : facts)
    for (const std::string& label : *fact.labels) wanted_lengths |= length_bit(label.size());
  for (size_t k = 0; k < schema.mig_profiles(); ++k)
    wanted_lengths |= length_bit(schema.mig_count_labels[k].size()) | length_bit(schema.mig_memory_labels[k].size());
  const size_t levels = std::min(schema.node_topology_labels.size(), kMaxTopologyLevels);
  for (size_t l = 0; l < levels; ++l) wanted_lengths |= length_bit(schema.node_topology_labels[l].size());
  for (auto f : take_object(map, "")) {
    std::string_view key = field_key(f, "");
    if ((wanted_lengths & length_bit(key.size())) == 0) {
      validate_value(take(f.value(), key, "a value"), key);
      continue;
    }
    bool wanted = false;
    for (const Fact& fact : facts) {
      for (size_t i = 0; i < fact.labels->size() && !wanted; ++i) {
        if (key != (*fact.labels)[i]) continue;
        wanted = true;
        std::string_view value;
        try {
          value = take_string(f.value(), "");
        } catch (DecodeError& e) {
          throw e.within(key);
        }
        if (!*fact.value || i < *fact.source) {  // a label earlier in the list wins
          *fact.value = value;
          *fact.source = static_cast<uint8_t>(i);
        }
      }
      if (wanted) break;
    }
    for (size_t k = 0; k < schema.mig_profiles() && !wanted; ++k) {
      const bool count = key == schema.mig_count_labels[k];
      if (!count && key != schema.mig_memory_labels[k]) continue;
      wanted = true;
      try {
        (count ? out.mig_count : out.mig_memory)[k] = take_string(f.value(), "");
      } catch (DecodeError& e) {
        throw e.within(key);
      }
    }
    for (size_t l = 0; l < levels && !wanted; ++l) {
      if (key != schema.node_topology_labels[l]) continue;
      wanted = true;
      try {
        out.topology[l] = take_string(f.value(), "");
      } catch (DecodeError& e) {
        throw e.within(key);
      }
    }
    if (!wanted) validate_value(take(f.value(), key, "a value"), key);
  }
}

}  // namespace

void decode_node(od::value node, const ViewSchema& schema, NodeView& out) {
  decode_node(take_object(node, ""), schema, out);
}

// Every part the policy does not read is still validated (validate_value), in the same pass: a node
// the filter echoes must be JSON throughout, and a body that is not JSON is a 400.
void decode_node(od::object node, const ViewSchema& schema, NodeView& out) {
  out = NodeView{};
  for (auto f : node) {
    std::string_view key = field_key(f, "");
    if (equals_ignore_case(key, "metadata")) {
      for (auto m : take_object(f.value(), "metadata")) {
        std::string_view mkey = field_key(m, "metadata");
        if (equals_ignore_case(mkey, "name")) {
          out.name = take_string(m.value(), "metadata.name");
        } else if (equals_ignore_case(mkey, "resourceVersion")) {
          out.resource_version = take_string(m.value(), "metadata.resourceVersion");
        } else if (equals_ignore_case(mkey, "labels")) {
          od::value labels = take(m.value(), "metadata.labels", "an object");
          if (take_null(labels, "metadata.labels")) continue;
          try {
            decode_node_labels(labels, schema, out);
          } catch (DecodeError& e) {
            throw e.within("metadata.labels");
          }
        } else if (equals_ignore_case(mkey, "annotations")) {
          od::value annotations = take(m.value(), "metadata.annotations", "an object");
          if (take_null(annotations, "metadata.annotations")) continue;
          std::array<std::optional<std::string_view>, 1> values;
          try {
            decode_string_map<1>(annotations, {&schema.node_gpu_utilization_annotation}, values);
          } catch (DecodeError& e) {
            throw e.within("metadata.annotations");
          }
          out.gpu_utilization = values[0];
        } else {
          // The field's full name is put together only on an error (a string per member and node
          // was a heap allocation each, thousands per request).
          try {
            validate_value(take(m.value(), "", "a value"), mkey);
          } catch (DecodeError& e) {
            throw e.within("metadata");
          }
        }
      }
    } else if (equals_ignore_case(key, "status")) {
      od::value status = take(f.value(), "status", "an object");
      if (take_null(status, "status")) continue;
      for (auto s : take_object(status, "status")) {
        std::string_view skey = field_key(s, "status");
        const bool capacity = equals_ignore_case(skey, "capacity");
        if (!capacity && !equals_ignore_case(skey, "allocatable")) {
          try {
            validate_value(take(s.value(), "", "a value"), skey);
          } catch (DecodeError& e) {
            throw e.within("status");
          }
          continue;
        }
        od::value list = take(s.value(), "status", "an object");
        if (take_null(list, "")) continue;
        try {
          decode_resource_list(list, schema.resources, capacity ? out.capacity : out.allocatable, false);
        } catch (DecodeError& e) {
          throw e.within(capacity ? "status.capacity" : "status.allocatable");
        }
      }
    } else {
      validate_value(take(f.value(), key, "a value"), key);
    }
  }
  if (out.name.empty()) throw DecodeError("metadata.name", "missing");
}

}  // namespace gpu_extender::wire
