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

using nlohmann::json;
using test_support::ExtenderProcess;

namespace {

// A port nobody listens on right now (Prometheus takes it a moment later).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

class PrometheusServer {
 public:
  explicit PrometheusServer(int target_port) {
    char tmpl[] = "/tmp/gpu-extender-prometheus-XXXXXX";
    dir_ = mkdtemp(tmpl);
    port_ = free_port();
    std::ofstream(dir_ + "/prometheus.yml") << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                                               "scrape_configs:\n  - job_name: gpu-extender\n    static_configs:\n"
                                               "      - targets: ['127.0.0.1:" << target_port << "']\n";
    std::fflush(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = dir_ + "/prometheus.log";
      freopen(log.c_str(), "w", stderr);
      freopen(log.c_str(), "a", stdout);
      execlp("prometheus", "prometheus", ("--config.file=" + dir_ + "/prometheus.yml").c_str(),
             ("--storage.tsdb.path=" + dir_ + "/data").c_str(),
             ("--web.listen-address=127.0.0.1:" + std::to_string(port_)).c_str(), "--log.level=warn", nullptr);
      _exit(127);
    }
  }
  ~PrometheusServer() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    std::system(("rm -rf " + dir_).c_str());
  }
  bool ready() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(std::chrono::seconds(1));
    client.set_read_timeout(std::chrono::seconds(2));
    auto res = client.Get("/-/ready");
    return res && res->status == 200;
  }
  json query(const std::string& promql) const {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(std::chrono::seconds(2));
    client.set_read_timeout(std::chrono::seconds(10));
    auto res = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!res) return json{{"status", "no answer"}};
    return json::parse(res->body);
  }
  std::string get(const std::string& path) const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(std::chrono::seconds(5));
    auto res = client.Get(path.c_str());
    return res ? res->body : "no answer";
  }
  std::string log() const { return test_support::read_file(dir_ + "/prometheus.log"); }

 private:
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

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
  ExtenderProcess p({"--kube-api-server", api.url(), "--kube-token-file", token, "--kube-ca-file",
                     test_support::TestCertificate::get().cert_file});
  PrometheusServer prometheus(p.port());
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

  const json dashboard = json::parse(test_support::read_file(test_support::source_path("manifests/monitoring/gpu-extender-dashboard.json")));
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
  CHECK(evaluated >= 14);
  std::remove(token.c_str());
}
