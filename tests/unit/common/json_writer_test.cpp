#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/json_writer.h"

using gpu_extender::append_json_string;

static std::string json_quoted(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

TEST_CASE("json writer: escapes what JSON requires and keeps UTF-8") {
  CHECK(json_quoted("plain") == "\"plain\"");
  CHECK(json_quoted("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(json_quoted("line\nnext\ttab") == "\"line\\nnext\\ttab\"");
  CHECK(json_quoted(std::string_view("\x01", 1)) == "\"\\u0001\"");
  CHECK(json_quoted("노드 ✓") == "\"노드 ✓\"");
}

TEST_CASE("json writer: invalid UTF-8 becomes U+FFFD, so the output always parses") {
  const std::string bad = "a\xff\xc0\x80z\xed\xa0\x80";
  const std::string out = json_quoted(bad);
  CHECK(out == "\"a\\ufffd\\ufffd\\ufffdz\\ufffd\\ufffd\\ufffd\"");
  CHECK_NOTHROW(nlohmann::json::parse(out));
}

TEST_CASE("json writer: integers") {
  std::string out;
  gpu_extender::append_json_int(out, -42);
  gpu_extender::append_json_int(out, 10);
  CHECK(out == "-4210");
}
