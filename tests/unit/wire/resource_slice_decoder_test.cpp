// ResourceSlices as NVIDIA's DRA driver publishes them (resource.k8s.io/v1): the node, driver, pool and
// each device's GPU facts; attribute names plain or qualified by the driver; a memory capacity that makes
// no sense is left out with a reason; lists and watch events.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "gpu_extender/wire/wire.h"

using namespace gpu_extender;

namespace {
// One slice of node `node` with `gpus` H100s as NVIDIA's DRA driver publishes them (deviceinfo.go: no
// "index" attribute; memory as NVML's figure, "81559Mi"), and a MIG device of a GPU in MIG mode (named
// gpu-<minor>-mig-<profile>-<profileId>-<placementStart>, tied to its parent by parentUUID and pciBusID).
std::string slice_json(const std::string& node, int gpus, const std::string& memory = "81559Mi") {
  std::string devices;
  for (int i = 0; i < gpus; ++i)
    devices += (i ? "," : "") + std::string(R"({"name":"gpu-)") + std::to_string(i) +
               R"(","attributes":{"type":{"string":"gpu"},"uuid":{"string":"GPU-4f0c1f6e-)" + std::to_string(i) +
               R"("},"productName":{"string":"NVIDIA H100 80GB HBM3"},"brand":{"string":"Nvidia"},)"
               R"("architecture":{"string":"Hopper"},"cudaComputeCapability":{"version":"9.0.0"},)"
               R"("driverVersion":{"version":"580.95.5"},"cudaDriverVersion":{"version":"13.0.0"},)"
               R"("resource.kubernetes.io/pciBusID":{"string":"0000:1)" + std::to_string(i) + R"(:00.0"}},)"
               R"("capacity":{"memory":{"value":")" + memory + R"("}}})";
  devices += R"(,{"name":"gpu-7-mig-1g10gb-19-0","attributes":{"type":{"string":"mig"},"uuid":{"string":"MIG-0c5d"},)"
             R"("parentUUID":{"string":"GPU-4f0c1f6e-7"},"profile":{"string":"1g.10gb"},)"
             R"("productName":{"string":"NVIDIA H100 80GB HBM3"},"architecture":{"string":"Hopper"},)"
             R"("resource.kubernetes.io/pciBusID":{"string":"0000:17:00.0"}},)"
             R"("capacity":{"memory":{"value":"9856Mi"},"multiprocessors":{"value":"16"}}})";
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
  const ListMeta meta = decoder.decode_list<ResourceSliceView>(body, schema, [&](const ResourceSliceView& s) {
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
        "dra-0-gpu.nvidia.com-abcde dra-0 gpu.nvidia.com dra-0: gpu-0/gpu/NVIDIA H100 80GB HBM3/Hopper/85520809984 "
        "gpu-1/gpu/NVIDIA H100 80GB HBM3/Hopper/85520809984 gpu-7-mig-1g10gb-19-0/mig/NVIDIA H100 80GB HBM3/Hopper/10334765056");
  CHECK(seen[1] == "dra-1-gpu.nvidia.com-abcde dra-1 gpu.nvidia.com dra-1: gpu-0/gpu/NVIDIA H100 80GB HBM3/Hopper/- "
                   "gpu-7-mig-1g10gb-19-0/mig/NVIDIA H100 80GB HBM3/Hopper/10334765056 (device gpu-0: capacity memory: invalid quantity \"lots\": no digits)");
}

TEST_CASE("resource slices: a watch event, and what is not a slice is refused with its field") {
  WireDecoder decoder;
  const ViewSchema schema;
  ResourceSliceView slice;
  const WatchEventHeader h = decoder.decode_event<ResourceSliceView>(R"({"type":"MODIFIED","object":)" + slice_json("n", 1) + "}",
                                                                 schema, slice);
  CHECK(h.type == "MODIFIED");
  CHECK(slice.node_name == "n");
  CHECK(slice.devices.size() == 2);
  // A slice of no single node (network devices) has a null or no nodeName.
  decoder.decode_event<ResourceSliceView>(
      R"({"type":"ADDED","object":{"metadata":{"name":"net"},"spec":{"driver":"x","nodeName":null,"allNodes":true,"devices":[]}}})",
      schema, slice);
  CHECK(slice.node_name.empty());
  CHECK(slice.devices.empty());
  CHECK_THROWS_WITH(decoder.decode_event<ResourceSliceView>(R"({"type":"ADDED","object":{"metadata":{"name":"s"},"spec":{"devices":[{"attributes":{}}]}}})",
                                                        schema, slice),
                    Catch::Contains("object.spec.devices[0].name: missing"));
  CHECK_THROWS_WITH(decoder.decode_list<ResourceSliceView>(R"({"items":[{"spec":{}}]})", schema, [](const ResourceSliceView&) {}),
                    Catch::Contains("items[0].metadata.name: missing"));
}

TEST_CASE("resource slices: what ties devices to a GPU, taints, and the pool's generation and size") {
  WireDecoder decoder;
  const ViewSchema schema;
  ResourceSliceView slice;
  decoder.decode_event<ResourceSliceView>(R"({"type":"ADDED","object":)" + slice_json("n", 1) + "}", schema, slice);
  REQUIRE(slice.devices.size() == 2);
  CHECK(slice.pool_generation == 1);
  CHECK(slice.pool_slice_count == 1);
  CHECK(slice.devices[0].uuid == std::optional<std::string_view>("GPU-4f0c1f6e-0"));
  CHECK(slice.devices[0].pci_bus_id == std::optional<std::string_view>("0000:10:00.0"));
  CHECK(slice.devices[1].parent_uuid == std::optional<std::string_view>("GPU-4f0c1f6e-7"));

  // Partitionable devices (DynamicMIG) consume their GPU's counter set; the driver taints a GPU after an
  // XID error; the pool republished as generation 4 of 2 slices.
  const std::string republished =
      R"({"type":"MODIFIED","object":{"metadata":{"name":"n-gpu.nvidia.com-xyz"},"spec":{"driver":"gpu.nvidia.com",)"
      R"("pool":{"name":"n","generation":4,"resourceSliceCount":2},"nodeName":"n","devices":[)"
      R"({"name":"gpu-0","attributes":{"type":{"string":"gpu"}},"consumesCounters":[{"counterSet":"gpu-0-counter-set",)"
      R"("counters":{"memory":{"value":"81559Mi"},"multiprocessors":{"value":"132"}}}],)"
      R"("taints":[{"key":"gpu.nvidia.com/xid","value":"79","effect":"NoSchedule","timeAdded":"2026-12-05T10:00:00Z"}]}]}}})";
  decoder.decode_event<ResourceSliceView>(republished, schema, slice);
  CHECK(slice.pool_generation == 4);
  CHECK(slice.pool_slice_count == 2);
  REQUIRE(slice.devices.size() == 1);
  CHECK(slice.devices[0].counter_sets == std::vector<std::string_view>{"gpu-0-counter-set"});
  CHECK(slice.devices[0].taints == std::vector<DeviceTaint>{{"gpu.nvidia.com/xid", "79", "NoSchedule"}});

  // Each of them, malformed, is refused with its field.
  auto field_of = [&](const std::string& spec) {
    try {
      decoder.decode_event<ResourceSliceView>(
          R"({"type":"ADDED","object":{"metadata":{"name":"s"},"spec":{"driver":"gpu.nvidia.com",)" + spec + "}}}", schema, slice);
    } catch (const DecodeError& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  CHECK(field_of(R"("pool":{"name":"n","generation":-1})") == "object.spec.pool.generation");
  CHECK(field_of(R"("pool":{"name":"n","resourceSliceCount":"2"})") == "object.spec.pool.resourceSliceCount");
  CHECK(field_of(R"("devices":[{"name":"d","taints":[{"key":7}]}])") == "object.spec.devices[0].taints[0].key");
  CHECK(field_of(R"("devices":[{"name":"d","taints":{}}])") == "object.spec.devices[0].taints");
  CHECK(field_of(R"("devices":[{"name":"d","consumesCounters":[{"counterSet":null}]}])") ==
        "object.spec.devices[0].consumesCounters[0].counterSet");
  // An attribute of another type (attributes are typed unions) is no bus id, and no error.
  CHECK(field_of(R"("devices":[{"name":"d","attributes":{"resource.kubernetes.io/pciBusID":{"int":3}}}])") == "(accepted)");
  CHECK_FALSE(slice.devices[0].pci_bus_id);
  CHECK(field_of(R"("devices":[{"name":"d","taints":null,"consumesCounters":null}])") == "(accepted)");
}
