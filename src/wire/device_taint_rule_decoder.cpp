// Decoding a DeviceTaintRule (resource.k8s.io/v1): its name, its device selector and its taint
// (device_taint_rule_view.h). Everything else (status conditions) is validated and skipped.
#include "object_decoders.h"

namespace gpu_extender::wire {
namespace {

// A selector field: a string, or null as if absent.
std::optional<std::string_view> optional_string(od::value value, const std::string& field) {
  if (take_null(value, field)) return std::nullopt;
  return take_string(od::value(value), field);
}

void decode_selector(od::value selector, DeviceTaintRuleView& out) {
  const std::string field = "spec.deviceSelector";
  if (take_null(selector, field)) return;
  out.has_selector = true;
  for_each_field(selector, field, [&](std::string_view key, auto v) {
    od::value value = take(v, key, "a value");
    if (key == "driver") out.driver = optional_string(value, field + ".driver");
    else if (key == "pool") out.pool = optional_string(value, field + ".pool");
    else if (key == "device") out.device = optional_string(value, field + ".device");
    else validate_value(value, key);
  });
}

}  // namespace

void decode_device_taint_rule(od::value rule, DeviceTaintRuleView& out) {
  out = DeviceTaintRuleView{};
  for_each_field(rule, "", [&](std::string_view key, auto v) {
    if (key == "metadata") {
      for_each_field(take(v, "metadata", "an object"), "metadata", [&](std::string_view mkey, auto m) {
        if (mkey == "name") out.name = take_string(m, "metadata.name");
        else validate_value(take(m, mkey, "a value"), mkey);
      });
    } else if (key == "spec") {
      for_each_field(take(v, "spec", "an object"), "spec", [&](std::string_view skey, auto s) {
        if (skey == "deviceSelector") decode_selector(take(s, "spec.deviceSelector", "an object"), out);
        else if (skey == "taint") out.taint = decode_device_taint(take(s, "spec.taint", "an object"), "spec.taint");
        else validate_value(take(s, skey, "a value"), skey);
      });
    } else {
      validate_value(take(v, key, "a value"), key);
    }
  });
  if (out.name.empty()) throw DecodeError("metadata.name", "missing");
}

}  // namespace gpu_extender::wire
