#pragma once
// Decoders of the Kubernetes objects inside the extender bodies: Pod and Node. Each reads the fields
// named by the ViewSchema, skips the rest, and throws DecodeError with a path relative to the object.
#include <array>
#include <optional>
#include <span>
#include <vector>

#include "common/pod_requests.h"
#include "gpu_extender/common/device_taint_rule_view.h"
#include "json_access.h"

namespace gpu_extender::wire {

// Buffers reused across pods so that decoding one allocates nothing in the steady state.
struct PodScratch {
  std::vector<ContainerResources> containers;
  std::vector<ContainerResources> init_containers;
};

void decode_pod(od::value pod, const ViewSchema& schema, PodRequest& out, PodScratch& scratch);
void decode_pod(od::object pod, const ViewSchema& schema, PodRequest& out, PodScratch& scratch);
void decode_node(od::value node, const ViewSchema& schema, NodeView& out);
void decode_node(od::object node, const ViewSchema& schema, NodeView& out);
void decode_resource_slice(od::value slice, const ViewSchema& schema, ResourceSliceView& out);
void decode_resource_claim(od::value claim, ResourceClaimView& out);
// A ResourceClaimTemplate: its name and namespace, and the requests of the claims made from it.
void decode_resource_claim_template(od::value claim_template, ResourceClaimView& out);
void decode_device_taint_rule(od::value rule, DeviceTaintRuleView& out);
// A device taint ({"key","value","effect","timeAdded"}), as slices' devices and DeviceTaintRules carry it.
DeviceTaint decode_device_taint(od::value taint, const std::string& field);
// The "Pod" of an extender body (ExtenderArgs, ExtenderPreemptionArgs): once, not null, validated
// throughout, errors under "Pod".
void decode_extender_pod(od::value pod, bool& seen, const ViewSchema& schema, PodRequest& out, PodScratch& scratch);
// The same for a Pod object already taken (also one at a document's root: On Demand's value calls
// such as is_null() are for values inside a document only).
void decode_extender_pod(od::object pod, const ViewSchema& schema, PodRequest& out, PodScratch& scratch);

// A Quantity as Go's Quantity.UnmarshalJSON takes it: a string, a bare number, or null (zero).
int64_t decode_quantity(od::value v, std::string_view field);

// Reads the values of `keys` from a string map (labels, annotations) into out[i]; others are skipped.
// A null key matches nothing.
inline void decode_string_map(od::value map, std::span<const std::string* const> keys,
                              std::span<std::optional<std::string_view>> out) {
  od::object obj = take_object(map, "");
  for (auto f : obj) {
    std::string_view key = field_key(f, "");
    bool wanted = false;
    for (size_t i = 0; i < keys.size() && !wanted; ++i) {
      if (!keys[i] || key != *keys[i]) continue;
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
template <size_t N>
inline void decode_string_map(od::value map, const std::array<const std::string*, N>& keys,
                              std::array<std::optional<std::string_view>, N>& out) {
  decode_string_map(map, std::span<const std::string* const>(keys), std::span<std::optional<std::string_view>>(out));
}


// A resource list ({"nvidia.com/gpu":"2",...}): tracked resources into `out`. With `validate_all`,
// untracked quantities are parsed too, so that a malformed one is reported.
void decode_resource_list(od::value list, const ResourceTable& table, ResourceAmounts& out, bool validate_all);

// Calls `each` for every element of the array `value` under `field` (null: none), with errors located.
template <typename Each>
void for_each_item(od::value value, const std::string& field, Each&& each) {
  if (take_null(value, field)) return;
  size_t index = 0;
  for (auto item : take(value.get_array(), field, "an array")) {
    const std::string at = field + "[" + std::to_string(index++) + "]";
    each(take(item, at, "an object"), at);
  }
}

// Calls `each(key, value)` for every member of the object `value` under `field`.
template <typename Each>
void for_each_field(od::value value, std::string_view field, Each&& each) {
  for (auto f : take_object(value, field)) {
    const std::string_view key = field_key(f, field);
    each(key, f.value());
  }
}

}  // namespace gpu_extender::wire
