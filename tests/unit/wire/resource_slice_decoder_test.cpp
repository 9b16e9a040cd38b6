// ResourceSlices as NVIDIA's DRA driver publishes them (resource.k8s.io/v1): the node, driver, pool and
// each device's GPU facts; attribute names plain or qualified by the driver; a memory capacity that makes
// no sense is left out with a reason; lists and watch events.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "gpu_extender/wire/wire.h"

using namespace gpu_extender;

namespace {
// One slice of node `node` with `gpus` H100s (and a MIG partition, which is no whole GPU).
std::string slice_json(const std::string& node, int gpus, const std::string& memory = "80Gi") {
  std::string devices;
  for (int i = 0; i < gpus; ++i)
    devices += (i ? "," : "") + std::string(R"({"name":"gpu-)") + std::to_string(i) +
               R"(","attributes":{"type":{"string":"gpu"},"productName":{"string":"NVIDIA H100 80GB HBM3"},)"
               R"("gpu.nvidia.com/architecture":{"string":"Hopper"},"cudaComputeCapability":{"version":"9.0.0"},)"
               R"("index":{"int":)" + std::to_string(i) + R"(}},"capacity":{"memory":{"value":")" + memory + R"("}}})";
  devices += R"(,{"name":"gpu-0-mig-1g","attributes":{"type":{"string":"mig"},"productName":{"string":"NVIDIA H100 80GB HBM3"}},)"
             R"("capacity":{"memory":{"value":"10Gi"}}})";
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")" + node +
         R"(-gpu.nvidia.com-abcde","resourceVersion":"7"},"spec":{"driver":"gpu.nvidia.com","pool":{"name":")" + node +
         R"(","generation":1,"resourceSliceCount":1},"nodeName":")" + node + R"(","devices":[)" + devices + "]}}";
}
}  // namespace

TEST_CASE("resource slices: a list of NVIDIA GPU slices is read device by device") {
  WireDecoder decoder;
  const ViewSchema schema;
  const std::string body = R"({"kind":"ResourceSliceList","metadata":{"resourceVersion":"42"},"items":[)" +
                           slice_json("dra-0", 2) + "," + slice_json("dra-1", 1, "lots") + "]}";
  std::vector<std::string> seen;
  const ListMeta meta = decoder.decode_resource_slice_list(body, schema, [&](const ResourceSliceView& s) {
    std::string line = std::string(s.name) + " " + std::string(s.node_name) + " " + std::string(s.driver) + " " +
                       std::string(s.pool) + ":";
    for (const DraDeviceView& d : s.devices)
      line += " " + std::string(d.name) + "/" + std::string(d.type.value_or("-")) + "/" +
              std::string(d.model.value_or("-")) + "/" + std::string(d.architecture.value_or("-")) + "/" +
              (d.memory_bytes ? std::to_string(*d.memory_bytes) : "-");
    if (!s.invalid_reason.empty()) line += " (" + s.invalid_reason + ")";
    seen.push_back(line);
  });
  CHECK(meta.resource_version == "42");
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] ==
        "dra-0-gpu.nvidia.com-abcde dra-0 gpu.nvidia.com dra-0: gpu-0/gpu/NVIDIA H100 80GB HBM3/Hopper/85899345920 "
        "gpu-1/gpu/NVIDIA H100 80GB HBM3/Hopper/85899345920 gpu-0-mig-1g/mig/NVIDIA H100 80GB HBM3/-/10737418240");
  CHECK(seen[1] == "dra-1-gpu.nvidia.com-abcde dra-1 gpu.nvidia.com dra-1: gpu-0/gpu/NVIDIA H100 80GB HBM3/Hopper/- "
                   "gpu-0-mig-1g/mig/NVIDIA H100 80GB HBM3/-/10737418240 (device gpu-0: capacity memory: invalid quantity \"lots\": no digits)");
}

TEST_CASE("resource slices: a watch event, and what is not a slice is refused with its field") {
  WireDecoder decoder;
  const ViewSchema schema;
  ResourceSliceView slice;
  const WatchEventHeader h = decoder.decode_resource_slice_event(R"({"type":"MODIFIED","object":)" + slice_json("n", 1) + "}",
                                                                 schema, slice);
  CHECK(h.type == "MODIFIED");
  CHECK(slice.node_name == "n");
  CHECK(slice.devices.size() == 2);
  // A slice of no single node (network devices) has a null or no nodeName.
  decoder.decode_resource_slice_event(
      R"({"type":"ADDED","object":{"metadata":{"name":"net"},"spec":{"driver":"x","nodeName":null,"allNodes":true,"devices":[]}}})",
      schema, slice);
  CHECK(slice.node_name.empty());
  CHECK(slice.devices.empty());
  CHECK_THROWS_WITH(decoder.decode_resource_slice_event(R"({"type":"ADDED","object":{"metadata":{"name":"s"},"spec":{"devices":[{"attributes":{}}]}}})",
                                                        schema, slice),
                    Catch::Contains("object.spec.devices[0].name: missing"));
  CHECK_THROWS_WITH(decoder.decode_resource_slice_list(R"({"items":[{"spec":{}}]})", schema, [](const ResourceSliceView&) {}),
                    Catch::Contains("items[0].metadata.name: missing"));
}
