// A real Prometheus server (Debian's package) scrapes the extender; every PromQL expression of the
// shipped dashboard is evaluated against what it collected.
#include <catch2/catch.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "prometheus_server.h"

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::PrometheusServer;

namespace {

using test_support::eventually;

void traffic(ExtenderProcess& p) {
  httplib::Client client("127.0.0.1", p.port());
  const json pod = {{"metadata", {{"name", "t"}, {"namespace", "ml"}, {"uid", "uid-t"}, {"annotations", {{"gpu.nvidia.com/model", "A100"}}}}},
                    {"spec", {{"containers", {{{"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
  for (int i = 0; i < 5; ++i) {
    client.Post("/filter", test_support::sample("filter-gpu-full.json"), "application/json");
    client.Post("/prioritize", test_support::sample("filter-gpu-full.json"), "application/json");
    client.Post("/filter", json({{"Pod", pod}, {"NodeNames", {"a100", "t4", "ghost"}}}).dump(), "application/json");
    client.Post("/filter", "{broken", "application/json");
    client.Post("/bind", R"({"PodName":"missing","PodNamespace":"ml","PodUID":"u","Node":"a100"})", "application/json");
    client.Post("/preempt", json({{"Pod", pod}, {"NodeNameToMetaVictims", {{"a100", {{"Pods", {{{"UID", "uid-busy"}}}}, {"NumPDBViolations", 0}}}}}}).dump(),
                "application/json");
  }
}

}  // namespace

TEST_CASE("prometheus: a real server scrapes the extender and the dashboard's every query answers") {
  test_support::FakeApiServer api;
  api.put_node(test_support::make_node("a100", "A100", 8));
  api.put_node(test_support::make_node("t4", "T4", 4, 0, 0, "16384"));
  api.put_pod(test_support::make_pod("ml", "busy", "uid-busy", "a100", 8));
  const std::string token = "/tmp/gpu-extender-prom-token-" + std::to_string(getpid());
  std::ofstream(token) << "test-token";
  // The extender also reads GPU utilisation from this Prometheus (none here: an empty answer), so that
  // the dashboard's refresh-age panel has its series.
  const int prometheus_port = test_support::free_port();
  ExtenderProcess p({"--kube-api-server", api.url(), "--kube-token-file", token, "--kube-ca-file",
                     test_support::TestCertificate::get().cert_file, "--prometheus-url",
                     "http://127.0.0.1:" + std::to_string(prometheus_port), "--prometheus-period-seconds", "1",
                     // and keeps deletion costs, for the dashboard's cost panels
                     "--deletion-costs", "--leader-elect-namespace", "gpu-extender", "--leader-elect-lease-duration-seconds",
                     "3", "--leader-elect-renew-deadline-seconds", "2", "--leader-elect-retry-period-seconds", "1"});
  PrometheusServer prometheus({{"gpu-extender", p.port()}}, prometheus_port);
  REQUIRE(eventually([&] { return prometheus.ready(); }, std::chrono::seconds(60)));
  const bool up = eventually([&] {
    const json up = prometheus.query(R"(up{job="gpu-extender"})");
    return up["status"] == "success" && !up["data"]["result"].empty() && up["data"]["result"][0]["value"][1] == "1";
  }, std::chrono::seconds(60));
  INFO("targets: " << prometheus.get("/api/v1/targets") << "\nlog: " << prometheus.log());
  REQUIRE(up);

  traffic(p);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // several scrapes see the counters move
  traffic(p);
  REQUIRE(eventually([&] {
    const json moved = prometheus.query(R"(sum(increase(gpu_extender_requests_total{job="gpu-extender",verb="filter"}[1m])))");
    return moved["status"] == "success" && !moved["data"]["result"].empty() &&
           std::stod(moved["data"]["result"][0]["value"][1].get<std::string>()) > 0;
  }, std::chrono::seconds(20)));

  const json dashboard = json::parse(test_support::read_file(test_support::source_path("charts/gpu-extender/files/dashboard.json")));
  size_t evaluated = 0;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel["targets"]) {
      const std::string expr = target["expr"];
      INFO(panel["title"].get<std::string>() << ": " << expr);
      const json answer = prometheus.query(expr);
      CHECK(answer["status"] == "success");
      CHECK_FALSE(answer["data"]["result"].empty());
      ++evaluated;
    }
  }
  CHECK(evaluated >= 20);
  std::remove(token.c_str());
}
