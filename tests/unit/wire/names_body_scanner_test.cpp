// Names mode's fast path (src/wire/names_body_scanner.h): which bodies it takes, and that on every body
// the decoder answers exactly as its general path does. A body with padding room may take the fast
// path; the same bytes in a string without that room always take the general one.
#include <catch2/catch.hpp>

#include <optional>

#include "test_support.h"
#include "wire/names_body_scanner.h"

using namespace gpu_extender;

namespace {

const ViewSchema& schema() {
  static const ViewSchema s = test_support::default_policy()->schema();
  return s;
}

std::string with_padding(const std::string& text) {
  std::string body = text;
  body.reserve(text.size() + kJsonPadding);
  return body;
}

// Everything the decoder says about a body, as text: the error, or the pod and the names.
std::string outcome(const std::string& body) {
  WireDecoder decoder;
  try {
    const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
    std::string out = "pod " + std::string(args.pod.ns) + "/" + std::string(args.pod.name) + " uid " +
                      std::string(args.pod.uid) + " gpus " + std::to_string(args.pod.gpus_milli()) +
                      (args.full_mode ? " full" : " names") + (args.names_verbatim ? " verbatim:" : ":");
    for (std::string_view n : args.node_names) out += " [" + std::string(n) + "]";
    return out;
  } catch (const DecodeError& e) {
    return std::string("error ") + e.what();
  }
}

// The names the scanner reads from `text`, copied out of the body; nothing when it leaves the body to
// the general decoder. `compact`: whether it read them as Go's compact array, 64 bytes at a time.
std::optional<std::vector<std::string>> plain(const std::string& text, bool* compact = nullptr) {
  const std::string body = with_padding(text);
  std::vector<std::string_view> names;
  wire::PlainNamesBody out{{}, &names, {}};
  if (!wire::scan_plain_names_body(body, body.data() + body.capacity(), out)) return std::nullopt;
  if (compact != nullptr) *compact = out.names_compact;
  return std::vector<std::string>(names.begin(), names.end());
}

const std::string kPod =
    R"({"metadata":{"name":"p","namespace":"ns","uid":"u-1"},"spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"2"}}}]}})";

}  // namespace

TEST_CASE("names scanner: takes kube-scheduler's body and reads every name") {
  const auto names =
      plain(R"({"Pod":)" + kPod + R"(,"Nodes":null,"NodeNames":["node-a","node-b","gpu-node-with-a-much-longer-name-0001"]})");
  REQUIRE(names);
  CHECK(*names == std::vector<std::string>{"node-a", "node-b", "gpu-node-with-a-much-longer-name-0001"});
  const auto none = plain(" {\n \"Pod\" : " + kPod + " , \"NodeNames\" : [ ] }\n");  // JSON white space anywhere
  REQUIRE(none);
  CHECK(none->empty());
  const auto captured = plain(test_support::fixture("node-cache-mode/filter-1-request.json"));
  REQUIRE(captured);
  CHECK_FALSE(captured->empty());
}

TEST_CASE("names scanner: leaves every other shape to the general decoder") {
  const std::vector<std::string> others = {
      R"({"pod":)" + kPod + R"(,"NodeNames":["a"]})",                          // another letter case
      R"({"Pod":)" + kPod + R"(,"Pod":)" + kPod + R"(,"NodeNames":["a"]})",    // a duplicate key
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a"],"NodeNames":["b"]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a\u0062"]})",                    // an escape in a name
      R"({"Pod":)" + kPod + R"(,"NodeNames":["n\u00e9"]})",
      "{\"Pod\":" + kPod + ",\"NodeNames\":[\"n\xc3\xa9\"]}",                  // not ASCII
      "{\"Pod\":" + kPod + ",\"NodeNames\":[\"a\tb\"]}",                       // a control byte
      R"({"Pod":)" + kPod + R"(,"NodeNames":[1]})",                            // not a string
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a",]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a" "b"]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":null})",
      R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[]},"NodeNames":["a"]})",    // full mode
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a"],"Extra":1})",                // another key
      R"({"Pod":null,"NodeNames":["a"]})",
      R"({"NodeNames":["a"]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a"]} x)",                        // trailing bytes
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a"])",                           // cut short
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a)",
      R"({"Pod":{"metadata":{"name":"p}}},"NodeNames":["a"]})",               // the Pod never closes
  };
  for (const std::string& body : others) {
    INFO(body);
    CHECK_FALSE(plain(body));
  }
}

TEST_CASE("names scanner: the decoder answers the same with and without the fast path") {
  const std::vector<std::string> bodies = {
      R"({"Pod":)" + kPod + R"(,"Nodes":null,"NodeNames":["node-a","node-b"]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":[]})",
      R"({"NodeNames":["x"],"Pod":)" + kPod + "}",
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a\u0062"]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a"],"NodeNames":["b"]})",
      R"({"Pod":)" + kPod + R"(,"Nodes":null,"Nodes":null,"NodeNames":["a"]})",
      R"({"Pod":)" + kPod + R"(,"NodeNames":["a"]} x)",
      // A Pod the scanner takes whole but simdjson refuses: the general path's error, not another.
      R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{"name":tru}]}},"NodeNames":["a"]})",
      R"({"Pod":{"metadata":{"name":"p"} "spec":{}},"NodeNames":["a"]})",
      R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[]}},"NodeNames":["a"]})",
      R"({"Pod":{"metadata":{"annotations":{"gpu.nvidia.com/memory":"40GB"}},"spec":{"containers":[]}},"NodeNames":["a"]})",
      R"({"Pod":{"metadata":{"name":"p\"}{"},"spec":{"containers":[]}},"NodeNames":["a"]})",
      R"({"Pod":{},"NodeNames":["a"]})",
      "{\"Pod\":" + kPod + ",\"NodeNames\":[\"a\x01\"]}",
  };
  for (const std::string& text : bodies) {
    INFO(text);
    CHECK(outcome(with_padding(text)) == outcome(std::string(text.data(), text.size())));
  }
}

TEST_CASE("names scanner: a names body one byte at a time shorter never decodes differently") {
  const std::string whole = R"({"Pod":)" + kPod + R"(,"Nodes":null,"NodeNames":["node-a","node-b"]})";
  for (size_t size = 0; size <= whole.size(); ++size) {
    const std::string text = whole.substr(0, size);
    INFO(text);
    CHECK(outcome(with_padding(text)) == outcome(std::string(text.data(), text.size())));
  }
}

TEST_CASE("names scanner: compact name lists read 64 bytes at a time agree with the byte-by-byte reading") {
  // Every list is tried with its bytes shifted 0..64 places (a first name of growing length), so each
  // quote, comma and bracket falls on every place of a 64-byte block, including its edges.
  const std::vector<std::vector<std::string>> lists = {
      {"a"},
      {"", "b", ""},  // empty names
      {"a,b", "c]d", "e[f"},  // commas and brackets inside names are name bytes
      {std::string(70, 'x'), "y", std::string(130, 'z')},  // names longer than a block
      {"gpu-0001", "gpu-0002", "gpu-0003", "gpu-0004", "gpu-0005", "gpu-0006", "gpu-0007", "gpu-0008", "gpu-0009"},
  };
  for (size_t shift = 0; shift <= 64; ++shift) {
    for (const auto& list : lists) {
      std::vector<std::string> names = list;
      names.insert(names.begin(), std::string(shift, 's'));
      std::string array = "[";
      for (size_t i = 0; i < names.size(); ++i) array += (i ? ",\"" : "\"") + names[i] + "\"";
      array += "]";
      const std::string body = R"({"Pod":)" + kPod + R"(,"NodeNames":)" + array + "}";
      INFO(body);
      bool compact = false;
      const auto taken = plain(body, &compact);
      REQUIRE(taken);
      CHECK(compact);
      CHECK(*taken == names);
      CHECK(outcome(with_padding(body)) == outcome(std::string(body.data(), body.size())));
    }
  }
}

TEST_CASE("names scanner: a compact list that is not quite one is read byte by byte, with the same answer") {
  const std::vector<std::string> arrays = {
      R"(["a",,"b"])", R"(["a""b"])", R"(["a",])", R"([,"a"])", R"(["a"b"])",
      R"(["a", "b"])", R"(["a","b" ])",  // white space: not compact, still plain
      R"(["a","b\"c"])", "[\"a\",\"b\x1f\"]", "[\"a\",\"b\xc3\xa9\"]", R"(["a","b")", R"(["a","b"}])",
  };
  for (size_t shift = 0; shift <= 64; ++shift) {
    for (const std::string& array : arrays) {
      const std::string padded = "[\"" + std::string(shift, 's') + "\"," + array.substr(1);
      const std::string body = R"({"Pod":)" + kPod + R"(,"NodeNames":)" + padded + "}";
      INFO(body);
      CHECK(outcome(with_padding(body)) == outcome(std::string(body.data(), body.size())));
      const bool whitespace_only = array.find(' ') != std::string::npos;
      bool compact = true;
      CHECK(plain(body, &compact).has_value() == whitespace_only);
      if (whitespace_only) CHECK_FALSE(compact);
    }
  }
}

TEST_CASE("names scanner: never reads the array's end from past the body") {
  // The body ends just after a name; the bytes after it (readable, not the body's) close the array.
  const std::string text = R"({"Pod":)" + kPod + R"(,"NodeNames":["a","b"]})";
  const std::string_view cut(text.data(), text.size() - 2);
  std::vector<std::string_view> names;
  wire::PlainNamesBody out{{}, &names, {}};
  CHECK_FALSE(wire::scan_plain_names_body(cut, text.data() + text.size(), out));
}

TEST_CASE("names scanner: a Pod's end found 64 bytes at a time agrees with the byte-by-byte reading") {
  // Annotation values with the bytes that decide where a string ends: escaped quotes after runs of
  // backslashes of every length (odd: the quote is escaped; even: it ends the string), brackets inside
  // strings, kubectl's last-applied JSON. Each is shifted 0..64 places by a key of growing length, so
  // every byte falls on every place of a 64-byte block and runs straddle block edges.
  const std::vector<std::string> values = {
      R"(plain)",
      R"(a\"b)",
      R"(a\\)",
      R"(a\\\"}]{[)",
      R"(\\\\\\)",
      R"(\\\\\"\\\\\\\"}})",
      R"({\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"annotations\":{},\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}\n)",
  };
  size_t fast = 0;
  for (const std::string& value : values) {
    for (size_t shift = 0; shift <= 64; ++shift) {
      const std::string pod = R"({"metadata":{"name":"p","namespace":"ns","uid":"u-1","annotations":{")" +
                              std::string(shift, 'k') + R"(":")" + value + R"(","x":"]}"}},"spec":{"containers":[]}})";
      const std::string text = R"({"Pod":)" + pod + R"(,"Nodes":null,"NodeNames":["node-a"]})";
      INFO(text);
      const std::string general = outcome(std::string(text.data(), text.size()));
      CHECK(outcome(with_padding(text)) == general);
      CHECK(general.rfind("pod ns/p uid u-1", 0) == 0);  // every one is a good body
      if (plain(text)) ++fast;
    }
  }
  CHECK(fast == values.size() * 65);  // and every one took the fast path
}
