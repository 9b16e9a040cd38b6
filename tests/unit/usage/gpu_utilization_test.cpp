#include <catch2/catch.hpp>

#include "gpu_extender/usage/gpu_utilization.h"
#include "policy/rule_support.h"

using namespace gpu_extender;

TEST_CASE("prometheus answer: per node from Hostname or hostname, percent to a fraction, bad values skipped") {
  const PrometheusVector v = parse_prometheus_vector(R"({"status":"success","data":{"resultType":"vector","result":[
    {"metric":{"Hostname":"old-label"},"value":[1700000000.1,"42.5"]},
    {"metric":{"hostname":"new-label"},"value":[1700000000.1,"100"]},
    {"metric":{"node":"by-node"},"value":[1700000000.1,"150"]},
    {"metric":{"hostname":"nan"},"value":[1700000000.1,"NaN"]},
    {"metric":{"gpu":"0"},"value":[1700000000.1,"5"]},
    {"metric":{"hostname":"text"},"value":[1700000000.1,"busy"]}]}})");
  CHECK(v.error.empty());
  CHECK(v.by_node == std::map<std::string, double>{{"old-label", 0.425}, {"new-label", 1.0}, {"by-node", 1.0}});
  CHECK(parse_prometheus_vector(R"({"status":"error","errorType":"bad_data","error":"parse error at char 4"})").error ==
        "Prometheus: parse error at char 4");
  CHECK(parse_prometheus_vector(R"({"status":"success","data":{"resultType":"matrix","result":[]}})").error ==
        "the query's result is not an instant vector");
  CHECK(parse_prometheus_vector("<html>").error == "the answer is not JSON");
}

TEST_CASE("gpuIdle: a fresh Prometheus value comes before the annotation") {
  auto s = rules::make_gpu_idle_scorer(rule_support::config());
  NodeView n = test_support::gpu_node("a", "A100", "1", 4);
  n.gpu_utilization = "0.9";
  NodeInput live(&n, std::nullopt);
  live.live_gpu_utilization = 0.25;
  const auto raw = rule_support::score(*s, test_support::gpu_pod(1), {live, NodeInput(&n, std::nullopt)});
  CHECK(raw[0] == Approx(75));
  CHECK(raw[1] == Approx(10));  // without a live value: the annotation
}

TEST_CASE("gpu utilisation source: no Prometheus, no values, and errors counted") {
  GpuUtilizationSource::Options o;
  o.url = "http://127.0.0.1:1";  // nothing listens
  o.timeout = std::chrono::milliseconds(1000);
  GpuUtilizationSource source(o, [] { return std::string("up"); });
  CHECK_FALSE(source.refresh());
  CHECK(source.stats().errors == 1);
  CHECK(source.stats().seconds_since_success == -1);
  CHECK_FALSE(source.reading("n1").last.has_value());
}
