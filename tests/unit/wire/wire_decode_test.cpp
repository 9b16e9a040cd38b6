#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/case_insensitive.h"
#include "test_support.h"

using namespace gpu_extender;
using test_support::fixture;

namespace {
const ViewSchema& schema() {
  static const ViewSchema s = test_support::default_policy()->schema();
  return s;
}
std::string decode_error_of(const std::string& body) {
  WireDecoder decoder;
  try {
    decoder.decode_extender_args(body, schema());
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "(no error)";
}
const std::string kPod = R"({"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c"}]}})";
}  // namespace

TEST_CASE("decode: full-mode filter body captured from kube-scheduler v1.26") {
  const std::string body = fixture("full-mode/filter-1-request.json");
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  CHECK(args.full_mode);
  CHECK(args.pod.name == "gpu-pod-1");
  CHECK(args.pod.ns == "default");
  CHECK(args.pod.uid == "d8120ba2-3ee5-40e3-86d7-55a66604da01");
  CHECK(args.pod.gpus_milli() == 1000);
  CHECK(args.pod.requested(ViewSchema::kPackedResource) == 1000);
  REQUIRE(args.nodes.size() == 3);
  CHECK(args.node_names == std::vector<std::string_view>{"node-a", "node-b", "node-c"});

  const NodeView& a = args.nodes[0];
  CHECK(a.gpu_model == std::optional<std::string_view>("A100"));
  CHECK(a.gpu_memory == std::optional<std::string_view>("40960"));
  CHECK(a.gpu_count == std::optional<std::string_view>("8"));
  CHECK(a.offered(ViewSchema::kGpuResource) == 8000);
  CHECK(a.offered(ViewSchema::kPackedResource) == 4000);
  CHECK_FALSE(args.nodes[1].gpu_model.has_value());
  CHECK(args.nodes[1].offered(ViewSchema::kGpuResource) == 4000);
}

TEST_CASE("decode: each node's bytes are the exact bytes of the request") {
  std::string body = fixture("full-mode/filter-1-request.json");
  body.reserve(body.size() + kJsonPadding);  // room for the padding: parsed in place, no copy
  const auto parsed = nlohmann::json::parse(body);
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  for (size_t i = 0; i < args.nodes.size(); ++i) {
    const std::string_view raw = args.nodes[i].raw_json;
    CHECK(raw.front() == '{');
    CHECK(raw.back() == '}');
    CHECK(raw.data() >= body.data());
    CHECK(raw.data() + raw.size() <= body.data() + body.size());  // a view into the body, not a copy
    CHECK(nlohmann::json::parse(raw) == parsed["Nodes"]["items"][i]);
  }
}

TEST_CASE("decode: node bytes survive white space and escapes around them") {
  const std::string body = "{ \"Pod\" : " + kPod +
                           ",\n \"Nodes\" : { \"items\" : [ \n {\"metadata\":{\"name\":\"n\\u0031\"}} ,\t"
                           "{\"metadata\":{\"name\":\"n2\",\"labels\":{\"x\":\"}]\"}}}\r\n ] } }";
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  REQUIRE(args.nodes.size() == 2);
  CHECK(args.nodes[0].name == "n1");
  CHECK(args.nodes[0].raw_json == "{\"metadata\":{\"name\":\"n\\u0031\"}}");
  CHECK(args.nodes[1].raw_json == "{\"metadata\":{\"name\":\"n2\",\"labels\":{\"x\":\"}]\"}}}");
}

TEST_CASE("decode: names mode (nodeCacheCapable) body captured from kube-scheduler v1.26") {
  const std::string body = fixture("node-cache-mode/filter-1-request.json");
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  CHECK_FALSE(args.full_mode);
  CHECK(args.nodes.empty());
  CHECK(args.node_names == std::vector<std::string_view>{"node-a", "node-c", "node-b"});
  CHECK(args.pod.name == "gpu-pod-1");
}

TEST_CASE("decode: extender keys match case-insensitively, as Go's decoder does") {
  const std::string body =
      "{\"pod\":" + kPod + ",\"NODES\":{\"ITEMS\":[{\"metadata\":{\"name\":\"x\"}}]},\"nodenames\":null}";
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  CHECK(args.full_mode);
  CHECK(args.pod.name == "p");
  CHECK(args.node_names == std::vector<std::string_view>{"x"});
  CHECK(equals_ignore_case("NodeNames", "nodenames"));
  CHECK_FALSE(equals_ignore_case("Node", "Nodes"));
}

TEST_CASE("decode: the pod's GPU annotations, and limits standing in for requests") {
  const std::string body = R"({"Pod":{"metadata":{"name":"p","annotations":{"gpu.nvidia.com/model":"A100",
    "gpu.nvidia.com/memory":"40960"}},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":2}}}],
    "initContainers":[{"resources":{"requests":{"custom.resource/aaa":"3"}}}]}},"NodeNames":[]})";
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  CHECK(args.pod.gpu_model == std::optional<std::string_view>("A100"));
  CHECK(args.pod.gpu_memory_mib == 40960);
  CHECK(args.pod.gpus_milli() == 2000);  // a bare JSON number is a quantity too, as Go accepts it
  CHECK(args.pod.requested(ViewSchema::kPackedResource) == 3000);
  CHECK(args.node_names.empty());
}

TEST_CASE("decode: a GPU class's implicit extended resource asks GPUs, added to nvidia.com/gpu") {
  // KEP-5004: kube-scheduler serves deviceclass.resource.kubernetes.io/<class> from the class's devices
  // (k8s.io/api resource/v1 ResourceDeviceClassPrefix), whatever the class's extendedResourceName says.
  const std::string body = R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[
    {"resources":{"limits":{"deviceclass.resource.kubernetes.io/gpu.nvidia.com":"2"}}},
    {"resources":{"limits":{"deviceclass.resource.kubernetes.io/gpu.nvidia.com":"1","nvidia.com/gpu":"1"}}},
    {"resources":{"limits":{"deviceclass.resource.kubernetes.io/mig.nvidia.com":"7"}}}]}},"NodeNames":[]})";
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  CHECK(args.pod.gpus_milli() == 4000);  // 2, then 1 + 1; MIG's class is no GPU class
  // The policy's dra.deviceClasses name the classes.
  ViewSchema other = schema();
  other.set_dra_gpu_classes({"gpu.example.com"});
  CHECK(decoder.decode_extender_args(body, other).pod.gpus_milli() == 1000);
}

TEST_CASE("decode: node names without escapes are their own JSON, others are unescaped and say so") {
  WireDecoder decoder;
  std::string plain = "{\"Pod\":" + kPod + ",\"NodeNames\":[\"gpu-1\", \"gp\u00fc-2\"]}";
  const ExtenderArgs& a = decoder.decode_extender_args(plain, schema());
  REQUIRE(a.node_names.size() == 2);
  CHECK(a.node_names[1] == "gp\u00fc-2");
  CHECK(a.names_verbatim);
  std::string escaped = "{\"Pod\":" + kPod + ",\"NodeNames\":[\"gpu-1\",\"gpu\\u002d2\"]}";
  const ExtenderArgs& b = decoder.decode_extender_args(escaped, schema());
  CHECK(b.node_names[1] == "gpu-2");
  CHECK_FALSE(b.names_verbatim);
  // A raw control character is not JSON: the first pass refuses it, escapes or not.
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"NodeNames\":[\"gpu\x01\"]}").find("malformed JSON") !=
        std::string::npos);
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"NodeNames\":[\"gpu\", 7]}") == "NodeNames[1]: expected a string");
}

TEST_CASE("decode: bad input is a DecodeError that names the field") {
  CHECK(decode_error_of("") .find("malformed JSON") != std::string::npos);
  CHECK(decode_error_of("{\"Pod\":") .find("malformed JSON") != std::string::npos);
  CHECK(decode_error_of("[1,2]").find("expected a JSON object") != std::string::npos);
  CHECK(decode_error_of("{\"Nodes\":null,\"NodeNames\":[]}") == "Pod: missing");
  CHECK(decode_error_of("{\"Pod\":null,\"NodeNames\":[]}") == "Pod: must not be null");
  CHECK(decode_error_of("{\"Pod\":" + kPod + "}") == "Nodes: neither Nodes nor NodeNames is given");
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"Nodes\":null,\"NodeNames\":null}") ==
        "Nodes: neither Nodes nor NodeNames is given");
  CHECK(decode_error_of("{\"Pod\":5,\"NodeNames\":[]}") == "Pod: expected an object");
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"NodeNames\":\"a\"}") == "NodeNames: expected an array of node names");
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"NodeNames\":[\"a\",7]}") == "NodeNames[1]: expected a string");
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"Nodes\":{\"items\":{}}}") == "Nodes.items: expected an array");
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"Nodes\":{\"items\":[{\"metadata\":{}}]}}") ==
        "Nodes.items[0].metadata.name: missing");
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"pod\":" + kPod + ",\"NodeNames\":[]}") == "Pod: duplicate key");
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"NodeNames\":[]} {}") == "trailing content after the JSON value");
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"NodeNames\":[]} x").find("malformed JSON") == 0);
}

TEST_CASE("decode: a quantity that does not parse is named with its full path") {
  const std::string node =
      R"({"metadata":{"name":"n"},"status":{"allocatable":{"nvidia.com/gpu":"eight"}}})";
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"ok\"}}," + node + "]}}") ==
        "Nodes.items[1].status.allocatable.nvidia.com/gpu: invalid quantity \"eight\": no digits");
  const std::string pod =
      R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"a"},{"resources":{"requests":{"cpu":"1x"}}}]}})";
  CHECK(decode_error_of("{\"Pod\":" + pod + ",\"NodeNames\":[]}") ==
        "Pod.spec.containers[1].resources.requests.cpu: invalid quantity \"1x\": unknown suffix \"x\"");
}

TEST_CASE("decode: a bad GPU annotation marks the pod, it does not fail the request") {
  // Any user can write any annotation; the pod is refused everywhere with a reason (Policy::filter),
  // and a bound pod carrying one still counts its requests in the cluster view.
  const std::string body = R"({"Pod":{"metadata":{"name":"p","annotations":{"gpu.nvidia.com/memory":"40GB"}},
    "spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"2"}}}]}},"NodeNames":["a","b"]})";
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  CHECK(args.pod.gpus_milli() == 2000);
  CHECK_FALSE(args.pod.gpu_memory_mib);
  CHECK(args.pod.invalid_reason.rfind("pod annotation gpu.nvidia.com/memory: invalid quantity \"40GB\"", 0) == 0);
}

TEST_CASE("decode: quantities beyond int64 milli-units saturate, sums never wrap") {
  // 10Pi of memory is 1.1e19 milli-bytes: valid for Kubernetes, so the object must still decode.
  const std::string big_memory = R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[
    {"resources":{"requests":{"memory":"10Pi","nvidia.com/gpu":"1"}}}]}},"NodeNames":[]})";
  WireDecoder decoder;
  CHECK(decoder.decode_extender_args(big_memory, schema()).pod.gpus_milli() == 1000);
  // 9223372036854775 + 9223372036854775 + 2 GPUs: in milli-units the sum passes INT64_MAX. It must
  // stay "too many", not wrap around to one GPU.
  const std::string many = R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[
    {"resources":{"limits":{"nvidia.com/gpu":"9223372036854775"}}},
    {"resources":{"limits":{"nvidia.com/gpu":"9223372036854775"}}},
    {"resources":{"limits":{"nvidia.com/gpu":"2"}}}]}},"NodeNames":[]})";
  CHECK(decoder.decode_extender_args(many, schema()).pod.gpus_milli() == INT64_MAX);
  const std::string huge = R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[
    {"resources":{"limits":{"nvidia.com/gpu":"1e30"}}}]}},"NodeNames":[]})";
  CHECK(decoder.decode_extender_args(huge, schema()).pod.gpus_milli() == INT64_MAX);
}

TEST_CASE("decode: wrong types deep inside name the field") {
  CHECK(decode_error_of(R"({"Pod":{"metadata":{"name":7}},"NodeNames":[]})") == "Pod.metadata.name: expected a string");
  CHECK(decode_error_of(R"({"Pod":{"spec":{"containers":{}}},"NodeNames":[]})") ==
        "Pod.spec.containers: expected an array");
  CHECK(decode_error_of("{\"Pod\":" + kPod +
                        R"(,"Nodes":{"items":[{"metadata":{"name":"n","labels":{"gpu.nvidia.com/model":1}}}]}})") ==
        "Nodes.items[0].metadata.labels.gpu.nvidia.com/model: expected a string");
}

TEST_CASE("decode: deeply nested JSON is refused past a bound, never a crash") {
  std::string nest(100000, '[');
  nest += std::string(100000, ']');
  // Where a node belongs: refused, naming the field.
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"Nodes\":{\"items\":[" + nest + "]}}") ==
        "Nodes.items[0]: expected an object");
  // In a field nobody reads: validated, to a depth as bounded as simdjson's DOM and Go's decoder.
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"NodeNames\":[],\"x\":" + nest + "}") ==
        "x: JSON nested more than 960 deep");
  const std::string deep_enough = std::string(950, '[') + std::string(950, ']');
  CHECK(decode_error_of("{\"Pod\":" + kPod + ",\"NodeNames\":[],\"x\":" + deep_enough + "}") == "(no error)");
}

TEST_CASE("decode: binding args from kube-scheduler v1.26") {
  WireDecoder decoder;
  const BindingArgs args = decoder.decode_binding_args(fixture("full-mode/bind-3-request.json"));
  CHECK(args.pod_name == "gpu-pod-1");
  CHECK(args.pod_namespace == "default");
  CHECK(args.node == "node-a");
  CHECK_FALSE(args.pod_uid.empty());
  CHECK_THROWS_WITH(decoder.decode_binding_args(R"({"PodName":"p","PodNamespace":"d"})"), "Node: missing");
  CHECK_THROWS_WITH(decoder.decode_binding_args(R"({"PodName":1})"), "PodName: expected a string");
}

TEST_CASE("decode: a body without spare capacity is copied and still decoded") {
  std::string body = fixture("node-cache-mode/filter-1-request.json");
  body.shrink_to_fit();
  WireDecoder decoder;
  CHECK(decoder.decode_extender_args(body, schema()).node_names.size() == 3);
}

TEST_CASE("decode: node names are read in place, and escaped ones are unescaped") {
  const std::string text = R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":["node-a" , "n\u006fde-b","nöde-c"]})";
  std::string body;
  body.reserve(text.size() + kJsonPadding);  // room for the padding: parsed in place, as the server does
  body.append(text);
  WireDecoder decoder;
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  REQUIRE(args.node_names.size() == 3);
  CHECK(args.node_names[0] == "node-a");
  CHECK(args.node_names[0].data() > body.data());  // a view into the body itself
  CHECK(args.node_names[0].data() < body.data() + body.size());
  CHECK(args.node_names[1] == "node-b");
  CHECK(args.node_names[2] == "nöde-c");
  CHECK(decode_error_of(R"({"Pod":{},"NodeNames":["a",7]})") == "NodeNames[1]: expected a string");
}

TEST_CASE("decode: a string followed by ':' in a part not read is not taken for a key") {
  // On Demand steps over an unread string followed by ':' as if it were a key (found by fuzzing).
  CHECK(decode_error_of(R"({"Pod":{"a":"b":"c"}},"NodeNames":[]})").find("not valid JSON") != std::string::npos);
  CHECK(decode_error_of("{\"Pod\":" + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"n","x":"a":"b"}}]}})")
            .rfind("Nodes.items[0].metadata: malformed JSON (The JSON document has an improper structure", 0) == 0);
  CHECK(decode_error_of("{\"Pod\":" + kPod + R"(,"NodeNames":[],"x":{"y":"a":"b"}})").rfind("x: not valid JSON", 0) == 0);
}

TEST_CASE("decode: each GPU fact comes from the first of its labels the node carries, hand labels first") {
  WireDecoder decoder;
  // GFD labels only: read, and the source recorded.
  const std::string gfd = "{\"Pod\":" + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"gfd","labels":{
      "nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB","nvidia.com/gpu.memory":"81920","nvidia.com/gpu.count":"8",
      "nvidia.com/gpu.family":"ampere"}}},
    {"metadata":{"name":"both","labels":{"nvidia.com/gpu.product":"NVIDIA-A100-PCIE-40GB","gpu.nvidia.com/model":"A100",
      "nvidia.com/gpu.memory":"40960","gpu.nvidia.com/memory":"40000"}}}]}})";
  std::string body = gfd;
  body.reserve(body.size() + kJsonPadding);
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  REQUIRE(args.nodes.size() == 2);
  const NodeView& only_gfd = args.nodes[0];
  CHECK(only_gfd.gpu_model == "NVIDIA-A100-SXM4-80GB");
  CHECK(only_gfd.gpu_model_label == 1);
  CHECK(only_gfd.gpu_memory == "81920");
  CHECK(only_gfd.gpu_count == "8");
  CHECK(only_gfd.gpu_count_label == 1);
  // Both present: the hand label wins, whichever comes first in the object.
  const NodeView& both = args.nodes[1];
  CHECK(both.gpu_model == "A100");
  CHECK(both.gpu_model_label == 0);
  CHECK(both.gpu_memory == "40000");
  CHECK(both.gpu_memory_label == 0);
  CHECK_FALSE(both.gpu_count);
}

TEST_CASE("decode: a node an autoscaler just launched gives its GPU from the autoscaler's labels, until GFD's come") {
  WireDecoder decoder;
  std::string body = "{\"Pod\":" + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"karpenter","labels":{
      "karpenter.k8s.aws/instance-gpu-name":"h100","karpenter.k8s.aws/instance-gpu-memory":"81920",
      "karpenter.k8s.aws/instance-gpu-count":"8","karpenter.k8s.aws/instance-gpu-manufacturer":"nvidia"}}},
    {"metadata":{"name":"auto-mode","labels":{"eks.amazonaws.com/instance-gpu-name":"l40s",
      "eks.amazonaws.com/instance-gpu-memory":"46068","eks.amazonaws.com/instance-gpu-count":"4"}}},
    {"metadata":{"name":"gke","labels":{"cloud.google.com/gke-accelerator":"nvidia-a100-80gb"}}},
    {"metadata":{"name":"gfd-ran","labels":{"karpenter.k8s.aws/instance-gpu-name":"h100",
      "nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","karpenter.k8s.aws/instance-gpu-memory":"81920",
      "nvidia.com/gpu.memory":"81559"}}}]}})";
  body.reserve(body.size() + kJsonPadding);
  const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
  REQUIRE(args.nodes.size() == 4);
  CHECK(args.nodes[0].gpu_model == "h100");
  CHECK(args.nodes[0].gpu_memory == "81920");
  CHECK(args.nodes[0].gpu_count == "8");
  CHECK(args.nodes[0].gpu_model_label == 2);
  CHECK(args.nodes[1].gpu_model == "l40s");
  CHECK(args.nodes[1].gpu_memory == "46068");
  CHECK(args.nodes[1].gpu_count == "4");
  CHECK(args.nodes[2].gpu_model == "nvidia-a100-80gb");
  CHECK_FALSE(args.nodes[2].gpu_memory);
  // GFD has run: its labels (what the driver reports) win over the instance type's.
  CHECK(args.nodes[3].gpu_model == "NVIDIA-H100-80GB-HBM3");
  CHECK(args.nodes[3].gpu_memory == "81559");
}

TEST_CASE("decode: an invalid escape in a key nobody reads is refused") {
  CHECK(decode_error_of("{\"Pod\":" + kPod + R"(,"NodeNames":[],"x":{"a\qb":1}})").rfind("x: not valid JSON", 0) == 0);
  CHECK(decode_error_of("{\"Pod\":" + kPod + R"(,"NodeNames":[],"x":{"a\u0041b":1}})") == "(no error)");
}

TEST_CASE("decode: a node name followed by ':' is not taken for a key, and bare quantities are JSON numbers") {
  CHECK(decode_error_of("{\"Pod\":" + kPod + R"(,"NodeNames":["a","b":"c"]})").find("malformed JSON") != std::string::npos);
  CHECK(decode_error_of("{\"Pod\":" + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"n"},"status":{"capacity":{"nvidia.com/gpu":01}}}]}})")
            .find("not valid JSON: malformed number") != std::string::npos);
}

TEST_CASE("decode: keys and strings are read in place at every length, and escapes anywhere are decoded or refused") {
  // Keys and strings without a backslash are read where they lie, 16 bytes at a time up to the closing
  // quote; a backslash anywhere sends them to simdjson's unescaping. Lengths from 0 to 40 put the
  // quote and the backslash on each side of a 16-byte step, at every offset in the body.
  WireDecoder decoder;
  for (size_t pad = 0; pad <= 40; ++pad) {
    const std::string filler(pad, 'x');
    INFO("filler of " << pad << " bytes");
    // A label before the GPU labels shifts them by `pad`; the escaped key is the count label itself.
    const std::string labels = R"({")" + filler + R"(":")" + filler + R"(","gpu.nvidia.com/model":"A100",)" +
                               R"("gpu.nvidia.com\/memory":"40960","gpu.nvidia.com\u002fcount":"8",)" +
                               R"("gpu.nvidia.com/family\\":"volta",")" + filler + R"(\"":"y"})";
    std::string body = "{\"Pod\":" + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"n","labels":)" + labels + "}}]}}";
    body.reserve(body.size() + kJsonPadding);
    const ExtenderArgs& args = decoder.decode_extender_args(body, schema());
    REQUIRE(args.nodes.size() == 1);
    const NodeView& node = args.nodes[0];
    CHECK(node.gpu_model == "A100");
    CHECK(node.gpu_model->data() > body.data());  // read in place
    CHECK(node.gpu_memory == "40960");             // its key escaped '/'
    CHECK(node.gpu_count == "8");                  // its key escaped '/' as \u002f
    CHECK_FALSE(node.gpu_family);                  // "gpu.nvidia.com/family\" is another label

    // An invalid escape after `pad` bytes, in a key and in a value nobody reads, is refused.
    CHECK(decode_error_of("{\"Pod\":" + kPod + R"(,"NodeNames":[],"x":{")" + filler + R"(\q":1}})")
              .rfind("x: not valid JSON", 0) == 0);
    CHECK(decode_error_of("{\"Pod\":" + kPod + R"(,"NodeNames":[],"x":{"a":")" + filler + R"(\q"}})")
              .rfind("x: not valid JSON", 0) == 0);
    CHECK(decode_error_of("{\"Pod\":" + kPod + R"(,"NodeNames":[],"x":{")" + filler + R"(\"":")" + filler +
                          R"(\u0041"}})") == "(no error)");
  }
}

TEST_CASE("decode: a pod in one of Kubernetes' own pod groups is marked, whichever release's field names it") {
  const auto decoded = [](const std::string& spec_extra) {
    WireDecoder decoder;
    const std::string body = R"({"Pod":{"metadata":{"name":"w","namespace":"ns"},"spec":{"containers":[{"name":"c"}])" +
                             spec_extra + R"(}},"NodeNames":["n"]})";
    return decoder.decode_extender_args(body, schema()).pod.native_pod_group;
  };
  CHECK_FALSE(decoded(""));
  CHECK(decoded(R"(,"schedulingGroup":{"podGroupName":"trainer"})"));        // 1.36+
  CHECK(decoded(R"(,"workloadRef":{"name":"job","podGroup":"workers"})"));    // 1.35
  CHECK_FALSE(decoded(R"(,"schedulingGroup":null)"));
  CHECK(decode_error_of(R"({"Pod":{"spec":{"schedulingGroup":"trainer"}},"NodeNames":["n"]})") ==
        "Pod.spec.schedulingGroup: expected an object");
}

TEST_CASE("decode: a pod with a deletionTimestamp is terminating (it leaves its group, its resources stay counted)") {
  const auto decoded = [](const std::string& metadata_extra) {
    WireDecoder decoder;
    const std::string body = R"({"Pod":{"metadata":{"name":"w","namespace":"ns")" + metadata_extra +
                             R"(},"spec":{"containers":[{"name":"c"}]}},"NodeNames":["n"]})";
    return decoder.decode_extender_args(body, schema()).pod.terminating;
  };
  CHECK_FALSE(decoded(""));
  CHECK_FALSE(decoded(R"(,"deletionTimestamp":null)"));
  CHECK(decoded(R"(,"deletionTimestamp":"2026-12-03T17:00:00Z")"));
  CHECK(decode_error_of(R"({"Pod":{"metadata":{"deletionTimestamp":5}},"NodeNames":["n"]})") ==
        "Pod.metadata.deletionTimestamp: expected a string");
}
