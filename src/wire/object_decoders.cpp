#include <algorithm>
#include <charconv>
#include <limits>
#include "object_decoders.h"

#include "common/case_insensitive.h"
#include "gpu_extender/quantity.h"

namespace gpu_extender::wire {
namespace {

// A Quantity as Go's Quantity.UnmarshalJSON takes it: a string, a bare number, or null (zero).
int64_t decode_quantity(od::value v, std::string_view field) {
  std::string_view text;
  od::json_type type = take(v.type(), field, "a quantity");
  if (type == od::json_type::null) {
    (void)take_null(v, field);
    return 0;
  }
  if (type == od::json_type::string) {
    text = take(v.get_string(), field, "a quantity string");
  } else if (type == od::json_type::number) {
    text = v.raw_json_token();
    if (!is_json_number(text)) throw DecodeError(std::string(field), "not valid JSON: malformed number");
    text = without_trailing_space(text);
  } else {
    throw DecodeError(std::string(field), "expected a quantity string");
  }
  QuantityParse q = parse_quantity(text);
  // Beyond int64 milli-units but valid for Kubernetes: saturate (it still fits nowhere), never wrap.
  if (!q.milli && q.too_large)
    return q.negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  if (!q.milli) throw DecodeError(std::string(field), q.error);
  return *q.milli;
}

// Reads the values of `keys` from a string map (labels, annotations); others are skipped.
template <size_t N>
void decode_string_map(od::value map, const std::array<const std::string*, N>& keys,
                       std::array<std::optional<std::string_view>, N>& out) {
  od::object obj = take_object(map, "");
  for (auto f : obj) {
    std::string_view key = field_key(f, "");
    bool wanted = false;
    for (size_t i = 0; i < N && !wanted; ++i) {
      if (key != *keys[i]) continue;
      wanted = true;
      try {
        out[i] = take_string(f.value(), "");
      } catch (DecodeError& e) {
        throw e.within(key);
      }
    }
    if (!wanted) validate_value(take(f.value(), key, "a value"), key);
  }
}

// The GPU facts of a node's labels: each from the first of its labels (in the schema's order of
// precedence) that the node carries. Other labels are validated and skipped.
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
    if (!wanted) validate_value(take(f.value(), key, "a value"), key);
  }
}

void decode_container(od::value container, const ViewSchema& schema, ContainerResources& out, bool init) {
  od::object obj = take_object(container, "");
  for (auto f : obj) {
    std::string_view key = field_key(f, "");
    if (equals_ignore_case(key, "resources")) {
      od::value resources = take(f.value(), "resources", "an object");
      if (take_null(resources, "resources")) continue;
      for (auto r : take_object(resources, "resources")) {
        std::string_view rkey = field_key(r, "resources");
        const bool requests = equals_ignore_case(rkey, "requests");
        if (!requests && !equals_ignore_case(rkey, "limits")) continue;
        od::value list = take(r.value(), "resources", "an object");
        if (take_null(list, "")) continue;
        try {
          decode_resource_list(list, schema.resources, requests ? out.requests : out.limits, true);
        } catch (DecodeError& e) {
          throw e.within(std::string("resources.") + std::string(requests ? "requests" : "limits"));
        }
      }
    } else if (init && equals_ignore_case(key, "restartPolicy")) {
      out.restartable_init = take_string(f.value(), "restartPolicy") == "Always";
    }
  }
}

void decode_containers(od::value list, const ViewSchema& schema, std::vector<ContainerResources>& out,
                       bool init, std::string_view name) {
  out.clear();
  if (take_null(list, name)) return;
  od::array arr = take(list.get_array(), name, "an array");
  for (auto item : arr) {
    out.emplace_back();
    try {
      decode_container(take(item, "", "an object"), schema, out.back(), init);
    } catch (DecodeError& e) {
      throw e.within(std::string(name) + "[" + std::to_string(out.size() - 1) + "]");
    }
  }
}

// A whole number of at least 0, written plainly ("3"), as gpushare's annotations hold them.
std::optional<int64_t> whole_number(std::string_view text) {
  int64_t n = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0) return std::nullopt;
  return n;
}

// `shared_gpu_memory`: the pod's ALIYUN_COM_GPU_MEM_POD, in the shared memory's unit, when valid.
void decode_pod_metadata(od::value metadata, const ViewSchema& schema, PodRequest& out,
                         std::optional<int64_t>& shared_gpu_memory) {
  for (auto f : take_object(metadata, "")) {
    std::string_view key = field_key(f, "");
    if (equals_ignore_case(key, "name")) {
      out.name = take_string(f.value(), "name");
    } else if (equals_ignore_case(key, "namespace")) {
      out.ns = take_string(f.value(), "namespace");
    } else if (equals_ignore_case(key, "uid")) {
      out.uid = take_string(f.value(), "uid");
    } else if (equals_ignore_case(key, "resourceVersion")) {
      out.resource_version = take_string(f.value(), "resourceVersion");
    } else if (equals_ignore_case(key, "annotations")) {
      od::value annotations = take(f.value(), "annotations", "an object");
      if (take_null(annotations, "annotations")) continue;
      std::array<std::optional<std::string_view>, 8> values;
      try {
        decode_string_map<8>(annotations,
                             {&schema.pod_gpu_model_annotation, &schema.pod_gpu_memory_annotation,
                              &schema.pod_gpu_family_annotation, &schema.pod_placement_annotation,
                              &schema.pod_shared_gpu_index_annotation, &schema.pod_shared_gpu_memory_annotation,
                              &schema.pod_deletion_cost_annotation, &schema.pod_deletion_cost_written_annotation},
                             values);
      } catch (DecodeError& e) {
        throw e.within("annotations");
      }
      out.gpu_model = values[0];
      out.gpu_family = values[2];
      out.deletion_cost = values[6];
      out.deletion_cost_written = values[7];
      if (values[1]) {
        // Any user can write any annotation: a bad one makes this pod unschedulable with a reason
        // (Policy::filter), never the request, the pod list or the watch fail.
        std::string error;
        out.gpu_memory_mib = parse_mebibytes(*values[1], &error);
        if (!out.gpu_memory_mib)
          out.invalid_reason = "pod annotation " + schema.pod_gpu_memory_annotation + ": " + error;
      }
      if (values[3]) {
        if (*values[3] == "spread") out.placement = Placement::kSpread;
        else if (*values[3] != "binpack")
          out.invalid_reason = "pod annotation " + schema.pod_placement_annotation + ": expected binpack or spread, not \"" +
                               std::string(*values[3]) + "\"";
      }
      // gpushare's device index and pod memory, as its extender (or this one) wrote them at bind. A
      // value that is not a device this extender tracks is ignored: the pod's memory then counts on
      // the node, not on a device.
      if (const auto device = values[4] ? whole_number(*values[4]) : std::nullopt;
          device && static_cast<size_t>(*device) < kMaxSharedGpuDevices)
        out.shared_gpu_device = static_cast<int>(*device);
      if (values[5]) shared_gpu_memory = whole_number(*values[5]);
    }
  }
}

}  // namespace

void decode_resource_list(od::value list, const ResourceTable& table, ResourceAmounts& out, bool validate_all) {
  for (auto f : take_object(list, "")) {
    std::string_view key = field_key(f, "");
    const int index = table.index_of(key);
    if (index < 0 && !validate_all) {
      validate_value(take(f.value(), key, "a quantity"), key);
      continue;
    }
    od::value v = take(f.value(), key, "a quantity");
    const int64_t milli = decode_quantity(v, key);
    if (index >= 0) out.set(static_cast<size_t>(index), milli);
  }
}

void decode_pod(od::value pod, const ViewSchema& schema, PodRequest& out, PodScratch& scratch) {
  decode_pod(take_object(pod, ""), schema, out, scratch);
}

void decode_pod(od::object pod, const ViewSchema& schema, PodRequest& out, PodScratch& scratch) {
  out = PodRequest{};
  ResourceAmounts overhead;
  std::optional<int64_t> shared_gpu_memory;
  scratch.containers.clear();
  scratch.init_containers.clear();
  for (auto f : pod) {
    std::string_view key = field_key(f, "");
    if (equals_ignore_case(key, "metadata")) {
      try {
        decode_pod_metadata(take(f.value(), "", "an object"), schema, out, shared_gpu_memory);
      } catch (DecodeError& e) {
        throw e.within("metadata");
      }
    } else if (equals_ignore_case(key, "spec")) {
      for (auto s : take_object(f.value(), "spec")) {
        std::string_view skey = field_key(s, "spec");
        try {
          if (equals_ignore_case(skey, "containers")) {
            decode_containers(take(s.value(), "containers", "an array"), schema, scratch.containers, false,
                              "containers");
          } else if (equals_ignore_case(skey, "initContainers")) {
            decode_containers(take(s.value(), "initContainers", "an array"), schema, scratch.init_containers,
                              true, "initContainers");
          } else if (equals_ignore_case(skey, "overhead")) {
            od::value v = take(s.value(), "overhead", "an object");
            if (!take_null(v, "overhead")) {
              try {
                decode_resource_list(v, schema.resources, overhead, true);
              } catch (DecodeError& e) {
                throw e.within("overhead");
              }
            }
          } else if (equals_ignore_case(skey, "nodeName")) {
            out.node_name = take_string(s.value(), "nodeName");
          } else if (equals_ignore_case(skey, "schedulerName")) {
            out.scheduler_name = take_string(s.value(), "schedulerName");
          }
        } catch (DecodeError& e) {
          throw e.within("spec");
        }
      }
    } else if (equals_ignore_case(key, "status")) {
      od::value status = take(f.value(), "status", "an object");
      if (take_null(status, "status")) continue;
      for (auto s : take_object(status, "status")) {
        if (equals_ignore_case(field_key(s, "status"), "phase")) out.phase = take_string(s.value(), "status.phase");
      }
    }
  }
  out.requests = effective_pod_requests(scratch.containers, scratch.init_containers, overhead);
  for (size_t i = 0; i < schema.resources.size(); ++i) {
    if (out.requests.has(i) && out.requests.get(i) < 0)
      throw DecodeError("spec", "negative request of " + schema.resources.name(i));
  }
  // A pod bound with a device holds its memory there: the annotation's amount (what the binder
  // wrote), else its request.
  if (out.shared_gpu_device) {
    const int64_t milli =
        shared_gpu_memory ? (*shared_gpu_memory > INT64_MAX / 1000 ? INT64_MAX : *shared_gpu_memory * 1000)
                          : out.shared_gpu_memory_milli();
    if (milli > 0) out.requests.set(shared_gpu_device_slot(static_cast<size_t>(*out.shared_gpu_device)), milli);
  }
}

void decode_extender_pod(od::value pod, bool& seen, const ViewSchema& schema, PodRequest& out, PodScratch& scratch) {
  if (seen) throw DecodeError("Pod", "duplicate key");
  seen = true;
  if (take_null(pod, "Pod")) throw DecodeError("Pod", "must not be null");
  od::object object;
  try {
    object = take_object(pod, "");
  } catch (DecodeError& e) {
    throw e.within("Pod");
  }
  decode_extender_pod(object, schema, out, scratch);
}

void decode_extender_pod(od::object pod, const ViewSchema& schema, PodRequest& out, PodScratch& scratch) {
  try {
    // Read twice, both times over the index On Demand has built: once whole to validate it (the
    // decoder skips most of a pod), then to decode it.
    validate_members(pod, "");
    take(pod.reset(), "", "an object");
    decode_pod(pod, schema, out, scratch);
  } catch (DecodeError& e) {
    throw e.within("Pod");
  }
}

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
