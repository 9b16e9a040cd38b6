// Decoding a ResourceClaim (resource.k8s.io/v1): what its allocation holds, where, and for which pods
// (resource_claim_view.h). Everything else is validated and skipped; a result or a reservation missing a
// field the view needs is an error with its path, as a malformed pod is.
#include <algorithm>

#include "gpu_extender/common/resource_claim_view.h"
#include "object_decoders.h"

namespace gpu_extender::wire {
namespace {

constexpr std::string_view kExtendedResourceAnnotation = "resource.kubernetes.io/extended-resource-claim";

// A boolean under `field`; null as false.
bool take_bool_or_null(simdjson::simdjson_result<od::value> result, const std::string& field) {
  od::value value = take(result, field, "true or false");
  if (take_null(value, field)) return false;
  bool b = false;
  if (value.get_bool().get(b) != simdjson::SUCCESS) throw DecodeError(field, "not true or false");
  return b;
}

// An array of references to objects (ownerReferences, reservedFor): calls `each(type, uid)` for each,
// where `type` is the value of `type_field` ("kind" or "resource").
template <typename Each>
void for_each_reference(od::value refs, const std::string& field, std::string_view type_field, Each&& each) {
  for_each_item(refs, field, [&](od::value ref, const std::string& at) {
    std::string_view type, uid;
    for_each_field(ref, at, [&](std::string_view key, auto value) {
      if (key == type_field) type = take_string(value, at + "." + std::string(type_field));
      else if (key == "uid") uid = take_string(value, at + ".uid");
      else validate_value(take(value, key, "a value"), key);
    });
    each(type, uid);
  });
}

void decode_metadata(od::value metadata, ResourceClaimView& out, std::string_view& owner_pod) {
  for_each_field(metadata, "metadata", [&](std::string_view key, auto value) {
    if (key == "name") out.name = take_string(value, "metadata.name");
    else if (key == "namespace") out.ns = take_string(value, "metadata.namespace");
    else if (key == "uid") out.uid = take_string(value, "metadata.uid");
    else if (key == "annotations") {
      od::value map = take(value, "metadata.annotations", "an object");
      if (take_null(map, "metadata.annotations")) return;
      for_each_field(map, "metadata.annotations", [&](std::string_view name, auto v) {
        const std::string_view text = take_string(v, name);
        if (name == kExtendedResourceAnnotation) out.extended_resource = text == "true";
      });
    } else if (key == "ownerReferences") {
      for_each_reference(take(value, "metadata.ownerReferences", "an array"), "metadata.ownerReferences", "kind",
                         [&](std::string_view kind, std::string_view uid) {
                           if (kind == "Pod") owner_pod = uid;
                         });
    } else {
      validate_value(take(value, key, "a value"), key);
    }
  });
}

// One requirement of a node selector term's matchFields: the node's name when it is `metadata.name In
// [one name]`, else nothing.
std::string_view node_named_by(od::value requirement, const std::string& at) {
  std::string_view field, op;
  std::vector<std::string_view> values;
  for_each_field(requirement, at, [&](std::string_view key, auto value) {
    if (key == "key") field = take_string(value, at + ".key");
    else if (key == "operator") op = take_string(value, at + ".operator");
    else if (key == "values") {
      od::value list = take(value, at + ".values", "an array");
      if (take_null(list, at + ".values")) return;
      for (auto s : take(list.get_array(), at + ".values", "an array")) values.push_back(take_string(s, at + ".values"));
    } else {
      validate_value(take(value, key, "a value"), key);
    }
  });
  return field == "metadata.name" && op == "In" && values.size() == 1 ? values.front() : std::string_view{};
}

// status.allocation.nodeSelector: the scheduler writes one term matching the field metadata.name of the
// node whose devices it allocated. Anything else (devices reachable from several nodes) names no node.
void decode_node_selector(od::value selector, ResourceClaimView& out) {
  const std::string base = "status.allocation.nodeSelector";
  if (take_null(selector, base)) return;
  for_each_field(selector, base, [&](std::string_view key, auto value) {
    if (key != "nodeSelectorTerms") return validate_value(take(value, key, "a value"), key);
    const std::string terms = base + ".nodeSelectorTerms";
    for_each_item(take(value, terms, "an array"), terms, [&](od::value term, const std::string& at) {
      for_each_field(term, at, [&](std::string_view tkey, auto tvalue) {
        if (tkey != "matchFields") return validate_value(take(tvalue, tkey, "a value"), tkey);
        for_each_item(take(tvalue, at + ".matchFields", "an array"), at + ".matchFields",
                      [&](od::value requirement, const std::string& rat) {
                        if (const std::string_view node = node_named_by(requirement, rat); !node.empty()) out.node = node;
                      });
      });
    });
  });
}

void decode_result(od::value result, const std::string& at, ResourceClaimView& out) {
  DraResultView r;
  for_each_field(result, at, [&](std::string_view key, auto value) {
    if (key == "driver") r.driver = take_string(value, at + ".driver");
    else if (key == "pool") r.pool = take_string(value, at + ".pool");
    else if (key == "device") r.device = take_string(value, at + ".device");
    else if (key == "shareID") r.share_id = take_string(value, at + ".shareID");
    else if (key == "adminAccess") r.admin_access = take_bool_or_null(value, at + ".adminAccess");
    else validate_value(take(value, key, "a value"), key);
  });
  if (r.driver.empty()) throw DecodeError(at + ".driver", "missing");
  if (r.device.empty()) throw DecodeError(at + ".device", "missing");
  out.results.push_back(r);
}

void decode_allocation(od::value allocation, ResourceClaimView& out) {
  const std::string base = "status.allocation";
  if (take_null(allocation, base)) return;
  for_each_field(allocation, base, [&](std::string_view key, auto value) {
    if (key == "nodeSelector") {
      decode_node_selector(take(value, base + ".nodeSelector", "an object"), out);
    } else if (key == "devices") {
      od::value devices = take(value, base + ".devices", "an object");
      if (take_null(devices, base + ".devices")) return;
      for_each_field(devices, base + ".devices", [&](std::string_view dkey, auto dvalue) {
        if (dkey != "results") {
          validate_value(take(dvalue, dkey, "a value"), dkey);
          return;
        }
        for_each_item(take(dvalue, base + ".devices.results", "an array"), base + ".devices.results",
                      [&](od::value result, const std::string& at) { decode_result(result, at, out); });
      });
    } else {
      validate_value(take(value, key, "a value"), key);
    }
  });
}

// spec.devices.requests[]: per request, exactly's class, mode, count and whether it asks a share of a
// device's capacity; firstAvailable is only noted.
void decode_request(od::value request, const std::string& at, ResourceClaimView& out) {
  DraRequestView r;
  for_each_field(request, at, [&](std::string_view key, auto value) {
    if (key == "firstAvailable") {
      r.alternatives = true;
      validate_value(take(value, key, "a value"), key);
    } else if (key == "exactly") {
      const std::string base = at + ".exactly";
      for_each_field(take(value, base, "an object"), base, [&](std::string_view k, auto v) {
        if (k == "deviceClassName") {
          r.device_class = take_string(v, base + ".deviceClassName");
        } else if (k == "allocationMode") {
          r.all = take_string(v, base + ".allocationMode") == "All";
        } else if (k == "count") {
          int64_t count = 0;
          if (take(v, base + ".count", "a whole number").get_int64().get(count) != simdjson::SUCCESS || count < 0)
            throw DecodeError(base + ".count", "expected a whole number, at least 0");
          r.count = count;
        } else if (k == "adminAccess") {
          r.admin_access = take_bool_or_null(v, base + ".adminAccess");
        } else if (k == "tolerations") {
          for_each_item(take(v, base + ".tolerations", "an array"), base + ".tolerations",
                        [&](od::value toleration, const std::string& tat) {
                          DeviceToleration t;
                          for_each_field(toleration, tat, [&](std::string_view tk, auto tv) {
                            if (tk == "key") t.key = take_string(tv, tat + ".key");
                            else if (tk == "operator") t.op = take_string(tv, tat + ".operator");
                            else if (tk == "value") t.value = take_string(tv, tat + ".value");
                            else if (tk == "effect") t.effect = take_string(tv, tat + ".effect");
                            else validate_value(take(tv, tk, "a value"), tk);  // tolerationSeconds
                          });
                          r.tolerations.push_back(std::move(t));
                        });
        } else if (k == "capacity") {
          const std::string capacity = base + ".capacity";
          od::value value_of_capacity = take(v, capacity, "an object");
          if (take_null(value_of_capacity, capacity)) return;
          for_each_field(value_of_capacity, capacity, [&](std::string_view ck, auto cv) {
            if (ck != "requests") return validate_value(take(cv, ck, "a value"), ck);
            const std::string requests = capacity + ".requests";
            od::value asked = take(cv, requests, "an object");
            if (take_null(asked, requests)) return;
            for_each_field(asked, requests, [&](std::string_view name, auto quantity) {
              take_string(quantity, requests + "." + std::string(name));  // a quantity, such as "20Gi"
              r.share = true;
            });
          });
        } else {
          validate_value(take(v, k, "a value"), k);
        }
      });
    } else {
      validate_value(take(value, key, "a value"), key);
    }
  });
  out.requests.push_back(r);
}

// A claim's spec (or a template's spec.spec): its device requests.
void decode_claim_spec(od::value spec, const std::string& base, ResourceClaimView& out) {
  if (take_null(spec, base)) return;
  for_each_field(spec, base, [&](std::string_view key, auto value) {
    if (key != "devices") return validate_value(take(value, key, "a value"), key);
    od::value devices = take(value, base + ".devices", "an object");
    if (take_null(devices, base + ".devices")) return;
    for_each_field(devices, base + ".devices", [&](std::string_view dkey, auto dvalue) {
      if (dkey != "requests") return validate_value(take(dvalue, dkey, "a value"), dkey);
      for_each_item(take(dvalue, base + ".devices.requests", "an array"), base + ".devices.requests",
                    [&](od::value request, const std::string& at) { decode_request(request, at, out); });
    });
  });
}

void decode_status(od::value status, ResourceClaimView& out) {
  if (take_null(status, "status")) return;
  for_each_field(status, "status", [&](std::string_view key, auto value) {
    if (key == "allocation") {
      decode_allocation(take(value, "status.allocation", "an object"), out);
    } else if (key == "reservedFor") {
      for_each_reference(take(value, "status.reservedFor", "an array"), "status.reservedFor", "resource",
                         [&](std::string_view resource, std::string_view uid) {
                           if (resource == "pods" && !uid.empty()) out.pods.push_back(uid);
                         });
    } else {
      validate_value(take(value, key, "a value"), key);
    }
  });
}

}  // namespace

void decode_resource_claim(od::value claim, ResourceClaimView& out) {
  out = ResourceClaimView{};
  std::string_view owner_pod;
  for (auto f : take_object(claim, "")) {
    const std::string_view key = field_key(f, "");
    if (key == "metadata") decode_metadata(take(f.value(), "metadata", "an object"), out, owner_pod);
    else if (key == "spec") decode_claim_spec(take(f.value(), "spec", "an object"), "spec", out);
    else if (key == "status") decode_status(take(f.value(), "status", "an object"), out);
    else validate_value(take(f.value(), key, "a value"), key);
  }
  if (out.name.empty()) throw DecodeError("metadata.name", "missing");
  if (!owner_pod.empty() && std::find(out.pods.begin(), out.pods.end(), owner_pod) == out.pods.end())
    out.pods.push_back(owner_pod);
}

void decode_resource_claim_template(od::value claim_template, ResourceClaimView& out) {
  out = ResourceClaimView{};
  std::string_view owner_pod;  // templates are owned by no pod; read as metadata is read
  for (auto f : take_object(claim_template, "")) {
    const std::string_view key = field_key(f, "");
    if (key == "metadata") {
      decode_metadata(take(f.value(), "metadata", "an object"), out, owner_pod);
    } else if (key == "spec") {  // {metadata, spec}: the claims made from it
      for_each_field(take(f.value(), "spec", "an object"), "spec", [&](std::string_view skey, auto value) {
        if (skey == "spec") decode_claim_spec(take(value, "spec.spec", "an object"), "spec.spec", out);
        else validate_value(take(value, skey, "a value"), skey);
      });
    } else {
      validate_value(take(f.value(), key, "a value"), key);
    }
  }
  if (out.name.empty()) throw DecodeError("metadata.name", "missing");
}

}  // namespace gpu_extender::wire
