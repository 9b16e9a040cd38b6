#pragma once
// Kubernetes resource.Quantity parsing.
//
// Grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go):
//   <quantity>     ::= <signedNumber><suffix>
//   <signedNumber> ::= <number> | +<number> | -<number>
//   <number>       ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <suffix>       ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI>     ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI>    ::= n | u | m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
//
// Values are held as an exact count of thousandths ("milli-units"), rounded up as Kubernetes'
// Quantity.MilliValue() rounds, so "100m" CPU, "2" GPUs and "32Gi" bytes all fit one int64.
// Thread-safe: pure functions.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpu_extender/common/status.h"

namespace gpu_extender {

struct QuantityParse {
  std::optional<int64_t> milli;  // set on success
  std::string error;             // set on failure: what is wrong with the text
  // A well-formed quantity whose milli-units do not fit in int64 (Kubernetes accepts it: `10Pi` of
  // memory is 1.1e19 milli-bytes). Callers that must not refuse such an object saturate instead.
  bool too_large = false;
  bool negative = false;
};

// Parses `text` as a Kubernetes quantity. Values whose milli-units do not fit in int64 are an error.
QuantityParse parse_quantity(std::string_view text);

// The whole units of a milli value, rounded up (Kubernetes' Quantity.Value()).
constexpr int64_t milli_to_units_ceil(int64_t milli) {
  // Without adding 999 first: INT64_MAX (a saturated sum) must not overflow on the way.
  return milli / 1000 + (milli > 0 && milli % 1000 != 0 ? 1 : 0);
}

// Formats a milli value the short way a person writes it: "2", "0.5", "1500m" is written "1.5".
std::string format_milli(int64_t milli);
// The same, appended to `out` without a temporary string.
void append_milli(std::string& out, int64_t milli);

}  // namespace gpu_extender

namespace gpu_extender {

// GPU memory as the labels and annotations give it: a plain number is MiB ("40960"); a quantity with a
// suffix is bytes ("40Gi" = 40960 MiB). Rounded up to whole MiB. Fails, saying why, when the text is
// not a non-negative quantity.
Result<int64_t> parse_mebibytes(std::string_view text);

}  // namespace gpu_extender
