// Live GPU utilisation end to end on real parts: the test serves DCGM exporter text for three nodes
// (values it changes mid-test), Debian's Prometheus scrapes it, and the extender queries that
// Prometheus (--prometheus-url) with its default PromQL. Scorer gpuIdle must follow the values,
// fall back once they go stale, and Prometheus going away must show in the metrics, never in /prioritize.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "../unit/host_scores.h"
#include "../unit/test_support.h"
#include "extender_process.h"
#include "prometheus_server.h"

using nlohmann::json;
using test_support::eventually;

namespace {

// A dcgm-exporter stand-in: DCGM_FI_DEV_GPU_UTIL per GPU, with the labels the real one writes. Node
// n1 is labelled Hostname (before 2026), n2 and n3 hostname (after).
class DcgmExporter {
 public:
  DcgmExporter() {
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mutex_);
      std::string text = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
      for (const auto& [node, percents] : util_) {
        const char* label = node == "n1" ? "Hostname" : "hostname";
        for (size_t gpu = 0; gpu < percents.size(); ++gpu)
          text += "DCGM_FI_DEV_GPU_UTIL{gpu=\"" + std::to_string(gpu) + "\",UUID=\"GPU-" + node + "-" +
                  std::to_string(gpu) + "\",device=\"nvidia" + std::to_string(gpu) +
                  "\",modelName=\"NVIDIA A100-SXM4-80GB\"," + label + "=\"" + node + "\"} " +
                  std::to_string(percents[gpu]) + "\n";
      }
      res.set_content(text, "text/plain; version=0.0.4");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~DcgmExporter() {
    server_.stop();
    thread_.join();
  }
  void set(const std::string& node, std::vector<int> percents) {
    std::lock_guard lock(mutex_);
    util_[node] = std::move(percents);
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  std::mutex mutex_;
  std::map<std::string, std::vector<int>> util_;
  int port_ = 0;
  std::thread thread_;
};

json node(const std::string& name) {
  return {{"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "4"}}}}}};
}

// Full mode, three identical 4-GPU nodes and a 1-GPU pod: only gpuIdle can tell them apart.
std::string body() {
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "uid-p"}}},
                    {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
  return json({{"Pod", pod}, {"Nodes", {{"items", {node("n1"), node("n2"), node("n3")}}}}}).dump();
}

std::map<std::string, int> scores(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::seconds(5));
  auto res = client.Post("/prioritize", body(), "application/json");
  if (!res || res->status != 200) return {};
  return test_support::scores_by_host(res->body, body());
}

double metric(const test_support::ExtenderProcess& p, const std::string& name) {
  httplib::Client client("127.0.0.1", p.port());
  auto res = client.Get("/metrics");
  if (!res) return -2;
  const size_t at = res->body.find("\n" + name + " ");
  return at == std::string::npos ? -2 : std::stod(res->body.substr(at + name.size() + 2));
}

}  // namespace

TEST_CASE("gpu utilisation: gpuIdle follows DCGM through a real Prometheus, and falls back when it goes") {
  DcgmExporter exporter;
  exporter.set("n1", {90, 90, 90, 90});  // busy
  exporter.set("n2", {10, 20, 10, 0});   // idle: mean 10%
  exporter.set("n3", {50, 50, 50, 50});
  const int prometheus_port = test_support::free_port();
  test_support::ExtenderProcess extender({"--prometheus-url", "http://127.0.0.1:" + std::to_string(prometheus_port),
                                          "--prometheus-period-seconds", "1", "--prometheus-stale-seconds", "3"});
  test_support::PrometheusServer prometheus({{"dcgm-exporter", exporter.port()}}, prometheus_port);
  REQUIRE(eventually([&] { return prometheus.ready(); }, std::chrono::seconds(60)));

  // Scores follow the values: the idlest node first.
  std::map<std::string, int> s;
  const bool ordered = eventually([&] {
    s = scores(extender.port());
    return s.size() == 3 && s["n2"] > s["n3"] && s["n3"] > s["n1"];
  }, std::chrono::seconds(60));
  INFO("prometheus log: " << prometheus.log() << "\nextender log: " << extender.log());
  REQUIRE(ordered);
  CHECK(metric(extender, "gpu_extender_gpu_utilization_nodes") == 3);

  // The values change: so do the scores.
  exporter.set("n1", {0, 0, 0, 0});
  exporter.set("n2", {100, 100, 100, 100});
  REQUIRE(eventually([&] {
    s = scores(extender.port());
    return s.size() == 3 && s["n1"] > s["n3"] && s["n3"] > s["n2"];
  }, std::chrono::seconds(30)));

  // /explain says where the value came from.
  httplib::Client client("127.0.0.1", extender.port());
  auto explained = client.Post("/explain", body(), "application/json");
  REQUIRE(explained);
  CHECK(explained->body.find("\"gpuUtilization\"") != std::string::npos);
  CHECK(explained->body.find("Prometheus at http://127.0.0.1:" + std::to_string(prometheus_port)) != std::string::npos);

  // Prometheus goes away: /prioritize keeps answering (the query runs on its own thread); values go stale after 3 s and gpuIdle
  // falls back (no annotation, no usage known: every node alike); the metrics show it.
  prometheus.stop();
  REQUIRE(eventually([&] {
    s = scores(extender.port());
    return s.size() == 3 && s["n1"] == s["n2"] && s["n2"] == s["n3"];
  }, std::chrono::seconds(30)));
  CHECK(metric(extender, "gpu_extender_gpu_utilization_query_errors_total") > 0);
  CHECK(metric(extender, "gpu_extender_gpu_utilization_refresh_age_seconds") > 3);
  explained = client.Post("/explain", body(), "application/json");
  REQUIRE(explained);
  CHECK(explained->body.find("stale since ") != std::string::npos);
  CHECK(extender.logged("GPU utilisation from Prometheus failed"));
}
