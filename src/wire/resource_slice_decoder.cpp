// Decoding a ResourceSlice (resource.k8s.io/v1): its node, driver and pool, and per device the GPU facts
// the schema names (resource_slice_view.h). Everything else is validated and skipped. A device fact that
// makes no sense (a memory capacity "lots") leaves that fact out and says why in invalid_reason: the
// slice's other devices and facts still count, as a node's do.
#include "common/case_insensitive.h"
#include "gpu_extender/common/quantity.h"
#include "object_decoders.h"

namespace gpu_extender::wire {
namespace {

// Kubernetes' standard attribute of a PCI device's address: the same on a GPU, its MIG devices and its
// vfio device, so it names the physical GPU (k8s.io/dynamic-resource-allocation/deviceattribute).
constexpr std::string_view kPciBusIdAttribute = "resource.kubernetes.io/pciBusID";

// A whole number of at least 0 under `field`.
int64_t take_count(simdjson::simdjson_result<od::value> value, const std::string& field) {
  int64_t n = 0;
  if (take(value, field, "a whole number").get_int64().get(n) != simdjson::SUCCESS || n < 0)
    throw DecodeError(field, "expected a whole number, at least 0");
  return n;
}

// Whether attribute or capacity `key` is `name`, unqualified or qualified by the driver ("driver/name").
bool names(std::string_view key, std::string_view name, std::string_view driver) {
  if (key == name) return true;
  return key.size() == driver.size() + 1 + name.size() && key.substr(0, driver.size()) == driver &&
         key[driver.size()] == '/' && key.substr(driver.size() + 1) == name;
}

// {"string": "..."} (or another kind of attribute value, which no GPU fact is): the string, if any.
std::optional<std::string_view> attribute_string(od::value value, std::string_view field) {
  std::optional<std::string_view> out;
  for (auto f : take_object(value, field)) {
    const std::string_view key = field_key(f, field);
    if (key == "string") out = take_string(f.value(), key);
    else validate_value(take(f.value(), key, "a value"), key);
  }
  return out;
}

void decode_device(od::value device, const ViewSchema& schema, std::string_view driver, DraDeviceView& out,
                   std::string& invalid_reason) {
  out = DraDeviceView{};
  std::string problem;  // said with the device's name, which may come after it
  for (auto f : take_object(device, "")) {
    const std::string_view key = field_key(f, "");
    if (key == "name") {
      out.name = take_string(f.value(), "name");
    } else if (key == "attributes" || key == "capacity") {
      const bool capacity = key == "capacity";
      od::value map = take(f.value(), key, "an object");
      if (take_null(map, key)) continue;
      for (auto a : take_object(map, key)) {
        const std::string_view name = field_key(a, key);
        od::value value = take(a.value(), name, "an object");
        if (capacity) {
          if (!names(name, schema.dra_memory_capacity, driver)) {
            validate_value(value, name);
            continue;
          }
          for (auto c : take_object(value, name)) {
            const std::string_view ckey = field_key(c, name);
            if (ckey != "value") {
              validate_value(take(c.value(), ckey, "a value"), ckey);
              continue;
            }
            const std::string_view text = take_string(c.value(), "capacity.memory.value");
            const QuantityParse q = parse_quantity(text);
            if (q.milli && *q.milli >= 0) out.memory_bytes = *q.milli / 1000;
            else if (problem.empty())
              problem = "capacity " + std::string(name) + ": " + (q.milli ? "negative: \"" + std::string(text) + "\"" : q.error);
          }
        } else if (names(name, schema.dra_model_attribute, driver)) {
          out.model = attribute_string(value, name);
        } else if (names(name, schema.dra_architecture_attribute, driver)) {
          out.architecture = attribute_string(value, name);
        } else if (names(name, schema.dra_type_attribute, driver)) {
          out.type = attribute_string(value, name);
        } else if (names(name, schema.dra_uuid_attribute, driver)) {
          out.uuid = attribute_string(value, name);
        } else if (names(name, schema.dra_parent_attribute, driver)) {
          out.parent_uuid = attribute_string(value, name);
        } else if (name == kPciBusIdAttribute) {
          out.pci_bus_id = attribute_string(value, name);
        } else {
          validate_value(value, name);
        }
      }
    } else if (key == "consumesCounters") {
      for_each_item(take(f.value(), key, "an array"), std::string(key), [&](od::value c, const std::string& at) {
        for_each_field(c, at, [&](std::string_view mkey, auto v) {
          if (mkey == "counterSet") out.counter_sets.push_back(take_string(v, at + ".counterSet"));
          else validate_value(take(v, mkey, "a value"), mkey);
        });
      });
    } else if (key == "taints") {
      for_each_item(take(f.value(), key, "an array"), std::string(key), [&](od::value t, const std::string& at) {
        out.taints.push_back(decode_device_taint(t, at));
      });
    } else {
      validate_value(take(f.value(), key, "a value"), key);
    }
  }
  if (out.name.empty()) throw DecodeError("name", "missing");
  if (!problem.empty() && invalid_reason.empty()) invalid_reason = "device " + std::string(out.name) + ": " + problem;
}

void decode_spec(od::value spec, const ViewSchema& schema, ResourceSliceView& out) {
  // The driver qualifies its attribute names: the API server writes spec.driver before spec.devices.
  for (auto f : take_object(spec, "spec")) {
    const std::string_view key = field_key(f, "spec");
    if (key == "driver") out.driver = take_string(f.value(), "spec.driver");
    else if (key == "nodeName") {
      od::value node = take(f.value(), "spec.nodeName", "a string");
      if (!take_null(node, "spec.nodeName")) out.node_name = take_string(od::value(node), "spec.nodeName");
    } else if (key == "pool") {
      od::value pool = take(f.value(), "spec.pool", "an object");
      for (auto p : take_object(pool, "spec.pool")) {
        const std::string_view pkey = field_key(p, "spec.pool");
        if (pkey == "name") out.pool = take_string(p.value(), "spec.pool.name");
        else if (pkey == "generation") out.pool_generation = take_count(p.value(), "spec.pool.generation");
        else if (pkey == "resourceSliceCount") out.pool_slice_count = take_count(p.value(), "spec.pool.resourceSliceCount");
        else validate_value(take(p.value(), pkey, "a value"), pkey);
      }
    } else if (key == "devices") {
      od::value devices = take(f.value(), "spec.devices", "an array");
      if (take_null(devices, "spec.devices")) continue;
      size_t index = 0;
      for (auto d : take(devices.get_array(), "spec.devices", "an array")) {
        out.devices.emplace_back();
        try {
          decode_device(take(d, "", "an object"), schema, out.driver, out.devices.back(), out.invalid_reason);
        } catch (DecodeError& e) {
          throw e.within("spec.devices[" + std::to_string(index) + "]");
        }
        ++index;
      }
    } else {
      validate_value(take(f.value(), key, "a value"), key);
    }
  }
}

}  // namespace

void decode_resource_slice(od::value slice, const ViewSchema& schema, ResourceSliceView& out) {
  out.name = out.node_name = out.driver = out.pool = {};
  out.pool_generation = 0;
  out.pool_slice_count = 1;
  out.devices.clear();
  out.invalid_reason.clear();
  for (auto f : take_object(slice, "")) {
    const std::string_view key = field_key(f, "");
    if (key == "metadata") {
      for (auto m : take_object(take(f.value(), "metadata", "an object"), "metadata")) {
        const std::string_view mkey = field_key(m, "metadata");
        if (mkey == "name") out.name = take_string(m.value(), "metadata.name");
        else validate_value(take(m.value(), mkey, "a value"), mkey);
      }
    } else if (key == "spec") {
      decode_spec(take(f.value(), "spec", "an object"), schema, out);
    } else {
      validate_value(take(f.value(), key, "a value"), key);
    }
  }
  if (out.name.empty()) throw DecodeError("metadata.name", "missing");
}

DeviceTaint decode_device_taint(od::value taint, const std::string& field) {
  DeviceTaint out;
  for_each_field(taint, field, [&](std::string_view key, auto v) {
    if (key == "key") out.key = take_string(v, field + ".key");
    else if (key == "value") out.value = take_string(v, field + ".value");
    else if (key == "effect") out.effect = take_string(v, field + ".effect");
    else validate_value(take(v, key, "a value"), key);  // timeAdded
  });
  return out;
}

}  // namespace gpu_extender::wire
