#include "gpu_extender/common/quantity.h"

#include <charconv>
#include <cstdlib>
#include <limits>

namespace gpu_extender {
namespace {

__extension__ typedef __int128 i128;  // GCC and Clang builtin; exact for every intermediate
constexpr i128 kMaxMilli = std::numeric_limits<int64_t>::max();
// Intermediate values stay below this bound, far inside __int128's range (1.7e38), so no step overflows.
constexpr i128 kIntermediateLimit = static_cast<i128>(1000000000000000000LL) * 1000000000000000000LL;  // 1e36
// Kubernetes keeps nano-unit precision; digits below that only round the value up.
constexpr int kMaxFractionDigits = 9;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Multiplies `value` by base^exp; false when the result exceeds the int64 milli range.
bool scale_up(i128& value, int base, int exp) {
  for (int i = 0; i < exp; ++i) {
    value *= base;
    if (value > kIntermediateLimit) return false;
  }
  return true;
}

}  // namespace

// One function, in the order of the grammar it reads (sign, digits, fraction, exponent or suffix, then
// the scaling to milli-units), as Kubernetes' own ParseQuantity reads it: split, its steps would share
// half a dozen locals and the early "invalid" exits.
QuantityParse parse_quantity(std::string_view text) {
  QuantityParse out;
  auto fail = [&](std::string_view why) {
    out.error = "invalid quantity \"" + std::string(text) + "\": " + std::string(why);
    return out;
  };
  auto too_large = [&] {
    out.too_large = true;
    out.negative = !text.empty() && text[0] == '-';
    return fail("too large");
  };
  if (text.empty()) return fail("empty");
  size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') {
    negative = text[pos] == '-';
    ++pos;
  }
  // Mantissa digits, as an integer plus the count of digits after the decimal point. Fraction digits
  // below a nano-unit are still validated, and only round the value up.
  i128 mantissa = 0;
  int fraction_digits = 0;
  size_t int_digits = 0, frac_seen = 0;
  bool dropped_nonzero = false;
  while (pos < text.size() && is_digit(text[pos])) {
    if (mantissa > kMaxMilli * 1000) {  // more integer digits than any int64 milli value has
      return too_large();
    }
    mantissa = mantissa * 10 + (text[pos] - '0');
    ++pos;
    ++int_digits;
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && is_digit(text[pos])) {
      if (fraction_digits < kMaxFractionDigits) {
        mantissa = mantissa * 10 + (text[pos] - '0');
        ++fraction_digits;
      } else if (text[pos] != '0') {
        dropped_nonzero = true;
      }
      ++pos;
      ++frac_seen;
    }
  }
  if (int_digits == 0 && frac_seen == 0) {
    return fail("no digits");
  }

  // Suffix: decimal SI, binary SI, or a decimal exponent.
  std::string_view suffix = text.substr(pos);
  int base = 10, exp = 0;
  if (suffix.empty()) {
  } else if (suffix == "n") {
    exp = -9;
  } else if (suffix == "u") {
    exp = -6;
  } else if (suffix == "m") {
    exp = -3;
  } else if (suffix == "k") {
    exp = 3;
  } else if (suffix == "M") {
    exp = 6;
  } else if (suffix == "G") {
    exp = 9;
  } else if (suffix == "T") {
    exp = 12;
  } else if (suffix == "P") {
    exp = 15;
  } else if (suffix == "E") {
    exp = 18;
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    base = 2;
    switch (suffix[0]) {
      case 'K': exp = 10; break;
      case 'M': exp = 20; break;
      case 'G': exp = 30; break;
      case 'T': exp = 40; break;
      case 'P': exp = 50; break;
      case 'E': exp = 60; break;
      default:
        return fail("unknown suffix \"" + std::string(suffix) + "\"");
    }
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view digits = suffix.substr(1);
    bool exp_negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      exp_negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (digits.empty() || digits.size() > 4) {
    return fail("invalid exponent");
  }
    for (char c : digits) {
      if (!is_digit(c)) {
    return fail("invalid exponent");
  }
      exp = exp * 10 + (c - '0');
    }
    if (exp_negative) exp = -exp;
  } else {
    return fail("unknown suffix \"" + std::string(suffix) + "\"");
  }

  // value_milli = mantissa * base^exp * 1000 / 10^fraction_digits, rounded up (away from zero for the
  // magnitude, as MilliValue rounds up).
  i128 numerator = mantissa;
  i128 denominator = 1;
  if (!scale_up(numerator, 10, 3)) {
    return too_large();
  }
  if (base == 2) {
    if (!scale_up(numerator, 2, exp)) {
    return too_large();
  }
  } else if (exp > 0) {
    if (!scale_up(numerator, 10, exp)) {
    return too_large();
  }
  } else {
    fraction_digits -= exp;  // a negative exponent is more digits after the point
  }
  if (fraction_digits > 36) {
    // numerator < 1e37 here, so the value is below one milli-unit: it rounds up to one (or is zero).
    out.milli = numerator == 0 && !dropped_nonzero ? 0 : (negative ? -1 : 1);
    return out;
  }
  for (int i = 0; i < fraction_digits; ++i) denominator *= 10;
  i128 milli = numerator / denominator;
  if (numerator % denominator != 0 || dropped_nonzero) milli += 1;
  if (milli > kMaxMilli) {
    return too_large();
  }
  out.milli = static_cast<int64_t>(negative ? -milli : milli);
  return out;
}

void append_milli(std::string& out, int64_t milli) {
  if (milli < 0) {
    out.push_back('-');
    milli = milli == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -milli;
  }
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, milli / 1000).ptr);
  int64_t frac = milli % 1000;
  if (frac == 0) return;
  char digits[3] = {static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                    static_cast<char>('0' + frac % 10)};
  size_t length = 3;
  while (length > 0 && digits[length - 1] == '0') --length;
  out.push_back('.');
  out.append(digits, length);
}

std::string format_milli(int64_t milli) {
  std::string out;
  append_milli(out, milli);
  return out;
}

}  // namespace gpu_extender

namespace gpu_extender {

Result<int64_t> parse_mebibytes(std::string_view text) {
  QuantityParse q = parse_quantity(text);
  if (!q.milli) return Status::failed(std::move(q.error));
  if (*q.milli < 0) return Status::failed("negative memory \"" + std::string(text) + "\"");
  const bool plain_number = !text.empty() && text.back() >= '0' && text.back() <= '9';
  if (plain_number) return milli_to_units_ceil(*q.milli);
  constexpr int64_t kMiB = int64_t{1024} * 1024;
  const int64_t bytes = milli_to_units_ceil(*q.milli);
  return bytes / kMiB + (bytes % kMiB != 0 ? 1 : 0);
}

}  // namespace gpu_extender
