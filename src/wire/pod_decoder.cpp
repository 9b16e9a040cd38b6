// Decoding a Pod: identity, GPU annotations, and its containers' effective requests.
#include <algorithm>
#include <charconv>
#include <cstdint>

#include "object_decoders.h"

#include "common/case_insensitive.h"
#include "gpu_extender/common/quantity.h"

namespace gpu_extender::wire {
namespace {

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

// The pod annotations and labels the decoder reads, by position: the GPU annotations (the first
// kGpuAnnotations, in the order decode_pod_metadata reads them), then the group's lists, each at most
// ViewSchema::kMaxLabelsPerFact long (unused positions null). Built per pod from the schema: pointers
// only, nothing allocated.
struct PodKeys {
  static constexpr size_t kGpuAnnotations = 8;
  static constexpr size_t kList = ViewSchema::kMaxLabelsPerFact;
  static constexpr size_t kAnnotations = kGpuAnnotations + 4 * kList;
  std::array<const std::string*, kAnnotations> annotations{};
  std::array<const std::string*, kList> labels{};

  static PodKeys of(const ViewSchema& schema) {
    PodKeys k;
    k.annotations = {&schema.pod_gpu_model_annotation,          &schema.pod_gpu_memory_annotation,
                     &schema.pod_gpu_family_annotation,         &schema.pod_placement_annotation,
                     &schema.pod_shared_gpu_index_annotation,   &schema.pod_shared_gpu_memory_annotation,
                     &schema.pod_deletion_cost_annotation,      &schema.pod_deletion_cost_written_annotation};
    const std::array<const std::vector<std::string>*, 4> lists{
        &schema.pod_group_annotations, &schema.pod_group_size_annotations,
        &schema.pod_required_topology_annotations, &schema.pod_preferred_topology_annotations};
    for (size_t l = 0; l < lists.size(); ++l)
      for (size_t i = 0; i < lists[l]->size() && i < kList; ++i)
        k.annotations[kGpuAnnotations + l * kList + i] = &(*lists[l])[i];
    for (size_t i = 0; i < schema.pod_group_labels.size() && i < kList; ++i) k.labels[i] = &schema.pod_group_labels[i];
    return k;
  }
  // The first value found of one list (its values at `values`, in the list's order).
  static std::optional<std::string_view> first_of(std::span<const std::optional<std::string_view>> values) {
    for (const auto& v : values)
      if (v) return v;
    return std::nullopt;
  }
  // The group's annotations among `values` (read with `annotations`) into `group`, with the key each
  // value came from. The group's name from an annotation wins over one from a label.
  void read_annotations(std::span<const std::optional<std::string_view>> values, PodGroupRef& group) const {
    auto list = [&](size_t l, std::string_view* key) {
      for (size_t i = 0; i < kList; ++i) {
        const size_t at = kGpuAnnotations + l * kList + i;
        if (!values[at]) continue;
        if (key) *key = *annotations[at];
        return values[at];
      }
      return std::optional<std::string_view>();
    };
    if (auto name = list(0, nullptr)) group.name = name;
    group.size = list(1, &group.size_key);
    group.required_topology = list(2, &group.required_key);
    group.preferred_topology = list(3, &group.preferred_key);
  }
};

// `shared_gpu_memory`: the pod's ALIYUN_COM_GPU_MEM_POD, in the shared memory's unit, when valid.
void decode_pod_metadata(od::value metadata, const ViewSchema& schema, PodRequest& out,
                         std::optional<int64_t>& shared_gpu_memory) {
  const PodKeys keys = PodKeys::of(schema);
  // A labels or annotations map (null: nothing) read for `wanted`, its errors under `name`; false when null.
  auto read_map = [](auto map, const char* name, const auto& wanted, auto& values) {
    od::value object = take(map, name, "an object");
    if (take_null(object, name)) return false;
    try {
      decode_string_map(object, wanted, values);
    } catch (DecodeError& e) {
      throw e.within(name);
    }
    return true;
  };
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
    } else if (equals_ignore_case(key, "deletionTimestamp")) {
      od::value stamp = take(f.value(), "deletionTimestamp", "a string");
      if (!take_null(stamp, "deletionTimestamp"))
        out.terminating = !take_string(od::value(stamp), "deletionTimestamp").empty();
    } else if (equals_ignore_case(key, "labels")) {
      std::array<std::optional<std::string_view>, ViewSchema::kMaxLabelsPerFact> values;
      if (!read_map(f.value(), "labels", keys.labels, values)) continue;
      if (!out.group.name) out.group.name = PodKeys::first_of(values);  // an annotation names the group first
    } else if (equals_ignore_case(key, "annotations")) {
      // The GPU annotations, then the group's lists (group_keys): one pass over the map.
      std::array<std::optional<std::string_view>, PodKeys::kAnnotations> values;
      if (!read_map(f.value(), "annotations", keys.annotations, values)) continue;
      keys.read_annotations(values, out.group);
      out.gpu_model = values[0];
      out.gpu_family = values[2];
      out.deletion_cost = values[6];
      out.deletion_cost_written = values[7];
      if (values[1]) {
        // Any user can write any annotation: a bad one makes this pod unschedulable with a reason
        // (Policy::filter), never the request, the pod list or the watch fail.
        if (const Result<int64_t> mib = parse_mebibytes(*values[1]); mib.ok())
          out.gpu_memory_mib = *mib;
        else
          out.invalid_reason = "pod annotation " + schema.pod_gpu_memory_annotation + ": " + mib.why();
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

// spec.resourceClaims: [{name, resourceClaimName | resourceClaimTemplateName}], kept by reference.
void decode_pod_claims(od::value list, PodRequest& out) {
  if (take_null(list, "resourceClaims")) return;
  size_t index = 0;
  for (auto item : take(list.get_array(), "resourceClaims", "an array")) {
    const std::string at = "resourceClaims[" + std::to_string(index++) + "]";
    PodRequest::ClaimRef ref;
    for (auto f : take_object(take(item, at, "an object"), at)) {
      const std::string_view key = field_key(f, at);
      od::value v = take(f.value(), key, "a string");
      if (take_null(v, key)) continue;
      if (key == "resourceClaimName") ref.claim = take_string(od::value(v), at + ".resourceClaimName");
      else if (key == "resourceClaimTemplateName") ref.claim_template = take_string(od::value(v), at + ".resourceClaimTemplateName");
      else validate_value(v, key);
    }
    if (!ref.claim.empty() || !ref.claim_template.empty()) out.claims.push_back(ref);
  }
}

}  // namespace

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
          } else if (equals_ignore_case(skey, "priority")) {
            od::value v = take(s.value(), "priority", "an integer");
            if (!take_null(v, "priority")) {
              const int64_t priority = take(v.get_int64(), "priority", "an integer");
              if (priority < INT32_MIN || priority > INT32_MAX) throw DecodeError("priority", "out of the int32 range");
              out.priority = static_cast<int32_t>(priority);
            }
          } else if (equals_ignore_case(skey, "preemptionPolicy")) {
            od::value v = take(s.value(), "preemptionPolicy", "a string");
            if (!take_null(v, "preemptionPolicy")) out.never_preempts = take_string(od::value(v), "preemptionPolicy") == "Never";
          } else if (equals_ignore_case(skey, "resourceClaims")) {
            decode_pod_claims(take(s.value(), "resourceClaims", "an array"), out);
          } else if (equals_ignore_case(skey, "schedulingGroup") || equals_ignore_case(skey, "workloadRef")) {
            od::value group = take(s.value(), skey, "an object");
            if (!take_null(group, skey)) {
              take_object(group, skey);  // its fields do not matter here, its being there does
              out.native_pod_group = true;
            }
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

}  // namespace gpu_extender::wire
