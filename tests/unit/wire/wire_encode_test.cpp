#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gpu_extender/wire/wire_encode.h"
#include "test_support.h"

using namespace gpu_extender;
using nlohmann::json;

TEST_CASE("encode: full-mode filter result echoes passing nodes byte for byte") {
  const std::string body = test_support::fixture("full-mode/filter-1-request.json");
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, test_support::default_policy()->schema());
  std::vector<NodeVerdict> verdicts(3);
  verdicts[1] = {Fit::kResolvable, "only 0 of 4 GPUs free", "gpuCount"};
  verdicts[2] = {Fit::kUnresolvable, "gpu model \"T4\" does not match", "gpuModel"};
  std::string out;
  encode_filter_result(args, verdicts, out);

  const json result = json::parse(out);
  CHECK(result["Nodes"]["metadata"] == json::object());
  REQUIRE(result["Nodes"]["items"].size() == 1);
  CHECK(out.find(std::string(args.nodes[0].raw_json)) != std::string::npos);
  CHECK(result["Nodes"]["items"][0] == json::parse(body)["Nodes"]["items"][0]);
  CHECK(result["NodeNames"] == json::array({"node-a"}));
  CHECK(result["FailedNodes"] == json({{"node-b", "only 0 of 4 GPUs free"}}));
  CHECK(result["FailedAndUnresolvableNodes"] == json({{"node-c", "gpu model \"T4\" does not match"}}));
  CHECK(result["Error"] == "");
  // Go field order of ExtenderFilterResult.
  CHECK(out.find("\"Nodes\"") < out.find("\"NodeNames\""));
  CHECK(out.find("\"NodeNames\"") < out.find("\"FailedNodes\""));
  CHECK(out.find("\"FailedNodes\"") < out.find("\"FailedAndUnresolvableNodes\""));
  CHECK(out.find("\"FailedAndUnresolvableNodes\"") < out.find("\"Error\""));
}

TEST_CASE("encode: names-mode filter result has Nodes null") {
  ExtenderArgs args;
  args.node_names = {"a", "b"};
  std::vector<NodeVerdict> verdicts(2);
  verdicts[0] = {Fit::kUnresolvable, "no", "x"};
  std::string out;
  encode_filter_result(args, verdicts, out);
  const json result = json::parse(out);
  CHECK(result["Nodes"].is_null());
  CHECK(result["NodeNames"] == json::array({"b"}));
  CHECK(result["FailedAndUnresolvableNodes"] == json({{"a", "no"}}));
  CHECK(result["FailedNodes"] == json::object());
}

TEST_CASE("encode: names given verbatim are copied, and the answer is the same as escaping them") {
  ExtenderArgs args;
  args.node_names = {"gpu-1", "gpu-2", "gpu-3"};
  std::vector<NodeVerdict> verdicts(3);
  verdicts[0] = {Fit::kResolvable, "busy \"now\"", "gpuCount"};
  verdicts[2] = {Fit::kUnresolvable, "no", "gpuModel"};
  std::string escaped, verbatim;
  encode_filter_result(args, verdicts, escaped);
  args.names_verbatim = true;
  encode_filter_result(args, verdicts, verbatim);
  CHECK(verbatim == escaped);
  CHECK(json::parse(verbatim)["FailedNodes"] == json({{"gpu-1", "busy \"now\""}}));
  const std::vector<int64_t> scores{INT64_MIN, 0, 10};
  escaped.clear();
  verbatim.clear();
  encode_host_priorities(args.node_names, scores, escaped);
  encode_host_priorities(args.node_names, scores, verbatim, true);
  CHECK(verbatim == escaped);
  CHECK(verbatim == R"([{"Host":"gpu-1","Score":-9223372036854775808},{"Host":"gpu-3","Score":10}])");  // 0s left out
}

TEST_CASE("encode: HostPriorityList, filter error, error object") {
  // The hosts that score 0 are left out (the scheduler scores a host it is not sent 0).
  std::vector<std::string_view> hosts{"a", "b\"q", "c", "d\"e"};
  std::vector<int64_t> scores{10, 3, 0, 1};
  std::string out;
  encode_host_priorities(hosts, scores, out);
  CHECK(out == R"([{"Host":"a","Score":10},{"Host":"b\"q","Score":3},{"Host":"d\"e","Score":1}])");
  out.clear();
  encode_host_priorities(std::span(hosts).subspan(2, 1), std::span(scores).subspan(2, 1), out);
  CHECK(out == "[]");  // every host 0: an empty list, not one entry
  out.clear();
  encode_host_priorities(std::span(hosts).subspan(2), std::span(scores).subspan(2), out);
  CHECK(out == R"([{"Host":"d\"e","Score":1}])");  // no comma before the first entry listed
  out.clear();
  const std::vector<std::string_view> plain{"x", "y", "z"};
  encode_host_priorities(plain, std::vector<int64_t>{0, 2, 0}, out, true);
  CHECK(out == R"([{"Host":"y","Score":2}])");  // the same when names are copied verbatim
  out.clear();
  encode_host_priorities({}, {}, out);
  CHECK(out == "[]");
  out.clear();
  encode_filter_error("boom", out);
  CHECK(json::parse(out)["Error"] == "boom");
  CHECK(json::parse(out)["NodeNames"].is_null());
  out.clear();
  encode_error_object("", out);
  CHECK(out == R"({"Error":""})");
}

TEST_CASE("encode: full-mode names are copied when read in place, escaped otherwise, and every reason is its node's") {
  // Full mode: names without escapes lie in the body and are written back as they are; one escaped
  // name sends every name through escaping. Either way the answer is the same.
  auto body_with = [](const std::string& second_name) {
    std::string body = R"({"Pod":{"metadata":{"name":"p"}},"Nodes":{"items":[)";
    for (const std::string& name : {std::string("gpu-0"), second_name, std::string("gpu-2")})
      body += R"({"metadata":{"name":")" + name + R"("}},)";
    body.back() = ']';
    body += "}}";
    body.reserve(body.size() + kJsonPadding);
    return body;
  };
  const std::string plain = body_with("gpu-1"), escaped = body_with("gpu\\\"1");
  WireDecoder decoder;
  const auto policy = test_support::default_policy();
  const ViewSchema& schema = policy->schema();
  std::vector<NodeVerdict> verdicts(3);
  verdicts[1] = {Fit::kResolvable, "busy \"now\"", "gpuCount"};
  std::string from_plain, from_escaped;
  CHECK(decoder.decode_extender_args(plain, schema).names_verbatim);
  const std::string without_padding_room(plain.data(), plain.size());  // parsed from the decoder's copy
  CHECK(decoder.decode_extender_args(without_padding_room, schema).names_verbatim);
  encode_filter_result(decoder.decode_extender_args(plain, schema), verdicts, from_plain);
  CHECK_FALSE(decoder.decode_extender_args(escaped, schema).names_verbatim);
  encode_filter_result(decoder.decode_extender_args(escaped, schema), verdicts, from_escaped);
  CHECK(json::parse(from_plain)["FailedNodes"] == json({{"gpu-1", "busy \"now\""}}));
  CHECK(json::parse(from_plain)["NodeNames"] == json::parse(from_escaped)["NodeNames"]);
  CHECK(json::parse(from_escaped)["FailedNodes"] == json({{"gpu\"1", "busy \"now\""}}));

  // Reasons are escaped once for each of the last few distinct ones: with more distinct reasons than
  // that, interleaved, every node still gets its own.
  ExtenderArgs args;
  std::vector<std::string> names;
  std::vector<NodeVerdict> many;
  json expected = json::object();
  for (int i = 0; i < 60; ++i) names.push_back("n" + std::to_string(i));
  for (int i = 0; i < 60; ++i) {
    args.node_names.push_back(names[static_cast<size_t>(i)]);
    const std::string reason = "reason \"" + std::to_string((i * 7) % 13) + "\"";
    many.push_back({i % 5 == 0 ? Fit::kPass : Fit::kUnresolvable, i % 5 == 0 ? "" : reason, "x"});
    if (i % 5 != 0) expected[names[static_cast<size_t>(i)]] = reason;
  }
  std::string out;
  encode_filter_result(args, many, out);
  CHECK(json::parse(out)["FailedAndUnresolvableNodes"] == expected);
}

TEST_CASE("encode: every node passing, names mode: the answer's names are the request's, compact or not") {
  const auto policy = test_support::default_policy();
  WireDecoder decoder;
  auto answer_for = [&](const std::string& names_json) {
    std::string body = R"({"Pod":{"metadata":{"name":"p","uid":"u"}},"Nodes":null,"NodeNames":)" + names_json + "}";
    body.reserve(body.size() + kJsonPadding);
    const ExtenderArgs& args = decoder.decode_extender_args(body, policy->schema());
    std::vector<NodeVerdict> verdicts(args.node_names.size());  // all pass
    std::string out;
    const ByteRange names = encode_filter_result(args, verdicts, out);
    CHECK(out.substr(names.begin, names.end - names.begin) == R"(["gpu-1","gpu-22","gpu-333"])");
    return out;
  };
  // Go's compact array (copied whole) and one with spaces (written name by name): the same answer.
  const std::string compact = answer_for(R"(["gpu-1","gpu-22","gpu-333"])");
  CHECK(compact == answer_for(R"([ "gpu-1" , "gpu-22",  "gpu-333" ])"));
  CHECK(compact == R"({"Nodes":null,"NodeNames":["gpu-1","gpu-22","gpu-333"],"FailedNodes":{},)"
                   R"("FailedAndUnresolvableNodes":{},"Error":""})");
  // One refused: the passing names only, the refusal in its map.
  std::string body = R"({"Pod":{"metadata":{"name":"p","uid":"u"}},"Nodes":null,"NodeNames":["gpu-1","gpu-22"]})";
  body.reserve(body.size() + kJsonPadding);
  const ExtenderArgs& args = decoder.decode_extender_args(body, policy->schema());
  std::vector<NodeVerdict> verdicts(2);
  verdicts[0] = {Fit::kResolvable, "busy", "gpuCount"};
  std::string out;
  encode_filter_result(args, verdicts, out);
  CHECK(out == R"({"Nodes":null,"NodeNames":["gpu-22"],"FailedNodes":{"gpu-1":"busy"},"FailedAndUnresolvableNodes":{},"Error":""})");
}
