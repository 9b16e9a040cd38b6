// Decoding API lists and watch events; the preemption arguments and result.
#include <catch2/catch.hpp>

#include "gpu_extender/wire/wire_encode.h"
#include "test_support.h"

using namespace gpu_extender;

TEST_CASE("watch events: types, objects, bookmarks, errors") {
  const ViewSchema schema = test_support::default_policy()->schema();
  WireDecoder decoder;
  PodRequest pod;
  auto h = decoder.decode_event<PodRequest>(
      R"({"type":"MODIFIED","object":{"metadata":{"name":"p","uid":"u1","resourceVersion":"42"},"spec":{"nodeName":"n1","containers":[{"resources":{"limits":{"nvidia.com/gpu":"2"}}}]},"status":{"phase":"Running"}}})",
      schema, pod);
  CHECK(h.type == "MODIFIED");
  CHECK(h.resource_version == "42");
  CHECK(pod.uid == "u1");
  CHECK(pod.node_name == "n1");
  CHECK(pod.gpus_milli() == 2000);

  h = decoder.decode_event<PodRequest>(R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"77"}}})", schema, pod);
  CHECK(h.type == "BOOKMARK");
  CHECK(h.resource_version == "77");

  h = decoder.decode_event<PodRequest>(
      R"J({"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}})J",
      schema, pod);
  CHECK(h.type == "ERROR");
  CHECK(h.error_code == 410);
  CHECK(h.error_message == "too old resource version: 1 (5)");

  NodeView node;
  h = decoder.decode_event<NodeView>(R"({"object":{"metadata":{"name":"n9","labels":{"gpu.nvidia.com/model":"H100"}}},"type":"ADDED"})",
                                schema, node);
  CHECK(h.type == "ADDED");
  CHECK(node.name == "n9");
  CHECK(node.gpu_model == std::optional<std::string_view>("H100"));
  CHECK_THROWS_WITH(decoder.decode_event<PodRequest>(R"({"object":{}})", schema, pod), "type: missing");
  CHECK_THROWS(decoder.decode_event<PodRequest>("{not json", schema, pod));
}

TEST_CASE("lists: items and the continue token of a page") {
  const ViewSchema schema = test_support::default_policy()->schema();
  WireDecoder decoder;
  std::vector<std::string> names;
  const ListMeta meta = decoder.decode_list<NodeView>(
      R"({"kind":"NodeList","metadata":{"resourceVersion":"9","continue":"abc"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})",
      schema, [&](const NodeView& n) { names.emplace_back(n.name); });
  CHECK(names == std::vector<std::string>{"a", "b"});
  CHECK(meta.resource_version == "9");
  CHECK(meta.continue_token == "abc");
}

TEST_CASE("preemption: full victims decode to requests, the answer is always meta victims") {
  const ViewSchema schema = test_support::default_policy()->schema();
  WireDecoder decoder;
  const PreemptionArgs& args = decoder.decode_preemption_args(
      R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToVictims":{"n1":{"Pods":[{"metadata":{"name":"v","uid":"v1"},"spec":{"nodeName":"n1","containers":[{"resources":{"limits":{"nvidia.com/gpu":"3"}}}]}}],"NumPDBViolations":2}},"NodeNameToMetaVictims":null})",
      schema);
  REQUIRE(args.candidates.size() == 1);
  CHECK_FALSE(args.meta_victims);
  CHECK(args.candidates[0].node == "n1");
  CHECK(args.candidates[0].pdb_violations == 2);
  CHECK(args.candidates[0].victims[0].uid == "v1");
  CHECK(args.candidates[0].victims[0].requests->get(ViewSchema::kGpuResource) == 3000);
  std::string out;
  encode_preemption_result(args, {true}, out);
  CHECK(out == R"({"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"v1"}],"NumPDBViolations":2}}})");
  CHECK_THROWS_WITH(decoder.decode_preemption_args(R"({"Pod":{},"NodeNameToMetaVictims":{"n":{"Pods":[{}]}}})", schema),
                    "NodeNameToMetaVictims.n.Pods[0].UID: missing");
}
