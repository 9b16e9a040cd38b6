// Each metric moves on each path: success, each 4xx, each rejection reason, binds, preemption.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "metrics_support.h"

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::scrape;
using test_support::value_of;

namespace {
// How much `series` moved: it must exist after; before, a labelled child not yet created counts 0.
double delta(const std::map<std::string, double>& before, const std::map<std::string, double>& after,
             const std::string& series) {
  return value_of(after, series) - (before.count(series) ? before.at(series) : 0.0);
}
int post(ExtenderProcess& p, const std::string& path, const std::string& body) {
  httplib::Client client("127.0.0.1", p.port());
  auto res = client.Post(path.c_str(), body, "application/json");
  return res ? res->status : -1;
}
}  // namespace

TEST_CASE("metrics: a filter moves requests, latency, sizes, nodes and rejections by rule") {
  ExtenderProcess p;
  const auto before = scrape(p.port());
  const std::string body = test_support::sample("filter-gpu-full.json");
  REQUIRE(post(p, "/filter", body) == 200);
  const auto after = scrape(p.port());
  CHECK(delta(before, after, R"(gpu_extender_requests_total{code="200",verb="filter"})") == 1);
  CHECK(delta(before, after, R"(gpu_extender_request_duration_seconds_count{verb="filter"})") == 1);
  CHECK(delta(before, after, R"(gpu_extender_request_body_bytes_sum{verb="filter"})") == static_cast<double>(body.size()));
  CHECK(delta(before, after, R"(gpu_extender_request_nodes_sum{verb="filter"})") == 9);
  CHECK(delta(before, after, R"(gpu_extender_filter_rejections_total{reason="gpuModel"})") == 3);
  CHECK(delta(before, after, R"(gpu_extender_filter_rejections_total{reason="gpuMemory"})") == 1);
  CHECK(delta(before, after, R"(gpu_extender_filter_rejections_total{reason="gpuCount"})") == 1);
  CHECK(delta(before, after, R"(gpu_extender_filter_rejections_total{reason="excludedResources"})") == 1);
  // The 100 us bucket exists, and the +Inf bucket holds every request (how long they took is bench/'s).
  CHECK(after.count(R"(gpu_extender_request_duration_seconds_bucket{verb="filter",le="0.0001"})"));
  CHECK(value_of(after, R"(gpu_extender_request_duration_seconds_bucket{verb="filter",le="+Inf"})") ==
        value_of(after, R"(gpu_extender_request_duration_seconds_count{verb="filter"})"));
}

TEST_CASE("metrics: the packed-resource rule, 4xx codes, binds without API, process and build info") {
  ExtenderProcess p({"--max-body-bytes", "4096"});
  const auto before = scrape(p.port());
  const json aaa_pod = {{"metadata", {{"name", "a"}, {"namespace", "d"}}},
                        {"spec", {{"containers", {{{"resources", {{"limits", {{"custom.resource/aaa", "1"}}}}}}}}}}};
  const json no_aaa_node = {{"metadata", {{"name", "plain"}}}, {"status", {{"allocatable", {{"cpu", "4"}}}}}};
  REQUIRE(post(p, "/filter", json({{"Pod", aaa_pod}, {"Nodes", {{"items", {no_aaa_node}}}}}).dump()) == 200);
  REQUIRE(post(p, "/prioritize", "{\"Pod\":") == 400);
  REQUIRE(post(p, "/filter", std::string(5000, ' ')) == 413);
  REQUIRE(post(p, "/bind", test_support::sample("bind.json")) == 200);
  // Names mode without a node cache: an Error inside a 200, which kube-scheduler only logs.
  REQUIRE(post(p, "/filter", R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":["n1"]})") == 200);
  const auto after = scrape(p.port());
  CHECK(delta(before, after, R"(gpu_extender_answer_errors_total{cause="bind_no_api",verb="bind"})") == 1);
  CHECK(delta(before, after, R"(gpu_extender_answer_errors_total{cause="no_node_cache",verb="filter"})") == 1);
  CHECK(delta(before, after, R"(gpu_extender_requests_total{code="200",verb="filter"})") == 2);
  CHECK(delta(before, after, R"(gpu_extender_filter_rejections_total{reason="packedResourceFit"})") == 1);
  CHECK(delta(before, after, R"(gpu_extender_requests_total{code="400",verb="prioritize"})") == 1);
  CHECK(delta(before, after, R"(gpu_extender_requests_total{code="413",verb="filter"})") == 1);
  CHECK(delta(before, after, R"(gpu_extender_binds_total{result="no_api"})") == 1);
  CHECK(value_of(after, "process_resident_memory_bytes") > 1e6);
  CHECK(value_of(after, "process_open_fds") > 2);
  CHECK(value_of(after, "process_start_time_seconds") > 1.7e9);
  bool build_info = false;
  for (const auto& [series, value] : after)
    if (series.rfind("gpu_extender_build_info{", 0) == 0 && value == 1) build_info = true;
  CHECK(build_info);
  for (const auto& [series, value] : after) {
    INFO(series);
    CHECK(series.find("node=") == std::string::npos);  // label values stay bounded: never a node...
    CHECK(series.find("pod=") == std::string::npos);   // ...or a pod name
  }
}

TEST_CASE("metrics: --metrics-port serves /metrics and probes apart from the verbs") {
  const int metrics_port = test_support::free_port();
  ExtenderProcess p({"--metrics-port", std::to_string(metrics_port)});
  REQUIRE(post(p, "/filter", test_support::sample("filter-gpu-full.json")) == 200);
  const auto series = scrape(metrics_port);
  CHECK(value_of(series, R"(gpu_extender_requests_total{code="200",verb="filter"})") == 1);
  httplib::Client side("127.0.0.1", metrics_port);
  auto health = side.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
  auto verb = side.Post("/filter", "{}", "application/json");
  REQUIRE(verb);
  CHECK(verb->status == 404);  // verbs are not served on the metrics port
}
