#include <catch2/catch.hpp>

#include "gpu_extender/common/quantity.h"

using gpu_extender::parse_quantity;

static int64_t m(const char* text) {
  auto q = parse_quantity(text);
  INFO(text << ": " << q.error);
  REQUIRE(q.milli.has_value());
  return *q.milli;
}

TEST_CASE("quantity: plain and decimal numbers") {
  CHECK(m("0") == 0);
  CHECK(m("8") == 8000);
  CHECK(m("+8") == 8000);
  CHECK(m("-2") == -2000);
  CHECK(m("0.5") == 500);
  CHECK(m(".5") == 500);
  CHECK(m("5.") == 5000);
  CHECK(m("1.0005") == 1001);  // rounded up to the next milli, as MilliValue does
  CHECK(m("007") == 7000);
}

TEST_CASE("quantity: milli, micro and nano suffixes round up") {
  CHECK(m("500m") == 500);
  CHECK(m("100m") == 100);
  CHECK(m("1500m") == 1500);
  CHECK(m("1u") == 1);
  CHECK(m("1000u") == 1);
  CHECK(m("1001u") == 2);
  CHECK(m("1n") == 1);
  CHECK(m("0m") == 0);
}

TEST_CASE("quantity: decimal SI suffixes") {
  CHECK(m("1k") == 1000LL * 1000);
  CHECK(m("2M") == 2000000LL * 1000);
  CHECK(m("3G") == 3000000000LL * 1000);
  CHECK(m("1T") == 1000000000000LL * 1000);
  CHECK(m("1P") == 1000000000000000LL * 1000);
  CHECK(m("1.5k") == 1500LL * 1000);
}

TEST_CASE("quantity: binary SI suffixes") {
  CHECK(m("1Ki") == 1024LL * 1000);
  CHECK(m("64Mi") == 64LL * 1024 * 1024 * 1000);
  CHECK(m("32Gi") == 32LL * 1024 * 1024 * 1024 * 1000);
  CHECK(m("1Ti") == (1LL << 40) * 1000);
  CHECK(m("1Pi") == (1LL << 50) * 1000);
  CHECK(m("0.5Gi") == 512LL * 1024 * 1024 * 1000);
}

TEST_CASE("quantity: decimal exponents") {
  CHECK(m("1e3") == 1000LL * 1000);
  CHECK(m("1E3") == 1000LL * 1000);
  CHECK(m("2E-1") == 200);
  CHECK(m("1e-3") == 1);
  CHECK(m("1e-4") == 1);  // below a milli rounds up to one
  CHECK(m("1.5e+2") == 150LL * 1000);
  CHECK(m("0e9") == 0);
  CHECK(m("1e-40") == 1);
}

TEST_CASE("quantity: E alone is exa, E with digits is an exponent") {
  // 1E = 1e18 units = 1e21 milli: more than int64 holds.
  CHECK_FALSE(parse_quantity("1E").milli.has_value());
  CHECK(m("0.000001E") == 1000000000000LL * 1000);
  CHECK(m("1E2") == 100000);
}

TEST_CASE("quantity: malformed text is an error that quotes it") {
  for (const char* bad : {"", " 1", "1 ", "abc", "1.2.3", "1KiB", "1ki", "1e", "1e+", "1e1.5", "--1", "+", ".", "1Mx",
                          "e3", "1,5", "0x10"}) {
    auto q = parse_quantity(bad);
    INFO("\"" << bad << "\"");
    CHECK_FALSE(q.milli.has_value());
    CHECK(q.error.find("invalid quantity") != std::string::npos);
  }
}

TEST_CASE("quantity: values beyond int64 milli are refused, not wrapped") {
  CHECK_FALSE(parse_quantity("9223372036854776").milli.has_value());
  CHECK(m("9223372036854775") == 9223372036854775000LL);
  CHECK_FALSE(parse_quantity("100000000000000000000000000000000000000").milli.has_value());
  CHECK_FALSE(parse_quantity("1e9999").milli.has_value());
  CHECK_FALSE(parse_quantity("8Ei").milli.has_value());
}

TEST_CASE("quantity: formatting and unit rounding") {
  using gpu_extender::format_milli;
  using gpu_extender::milli_to_units_ceil;
  CHECK(format_milli(2000) == "2");
  CHECK(format_milli(500) == "0.5");
  CHECK(format_milli(1250) == "1.25");
  CHECK(format_milli(-1500) == "-1.5");
  CHECK(milli_to_units_ceil(1) == 1);
  CHECK(milli_to_units_ceil(2000) == 2);
  CHECK(milli_to_units_ceil(0) == 0);
}

TEST_CASE("quantity: GPU memory in MiB or as bytes with a suffix") {
  using gpu_extender::parse_mebibytes;
  CHECK(parse_mebibytes("40960").value() == 40960);
  CHECK(parse_mebibytes("40Gi").value() == 40960);
  CHECK(parse_mebibytes("1Mi").value() == 1);
  CHECK(parse_mebibytes("1Ki").value() == 1);  // rounds up to a whole MiB
  const gpu_extender::Result<int64_t> lots = parse_mebibytes("lots");
  CHECK_FALSE(lots.ok());
  CHECK(lots.why().find("lots") != std::string::npos);
  CHECK_FALSE(parse_mebibytes("-5").ok());
}
