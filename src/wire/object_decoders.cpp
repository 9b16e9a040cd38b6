#include <limits>

#include "object_decoders.h"

#include "gpu_extender/common/quantity.h"

namespace gpu_extender::wire {

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

void decode_resource_list(od::value list, const ResourceTable& table, ResourceAmounts& out, bool validate_all) {
  // A resource and its aliases add up: a container may ask nvidia.com/gpu and a class's implicit resource.
  ResourceAmounts aliased;
  for (auto f : take_object(list, "")) {
    std::string_view key = field_key(f, "");
    const auto [index, alias] = table.find(key);
    if (index < 0 && !validate_all) {
      validate_value(take(f.value(), key, "a quantity"), key);
      continue;
    }
    od::value v = take(f.value(), key, "a quantity");
    const int64_t milli = decode_quantity(v, key);
    if (index < 0) continue;
    if (alias) aliased.add(static_cast<size_t>(index), milli);
    else out.set(static_cast<size_t>(index), milli);
  }
  out.add(aliased);
}

}  // namespace gpu_extender::wire
