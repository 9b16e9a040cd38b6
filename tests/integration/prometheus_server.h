#pragma once
// A real Prometheus server (Debian's package) for the tests: scrapes the given targets every second,
// answers instant queries, and can be stopped mid-test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "../unit/test_support.h"
#include "child_process.h"

namespace test_support {

class PrometheusServer {
 public:
  using json = nlohmann::json;
  // `jobs`: (job name, port on 127.0.0.1) to scrape. `port`: where Prometheus listens (0: any free).
  explicit PrometheusServer(const std::vector<std::pair<std::string, int>>& jobs, int port = 0) {
    char tmpl[] = "/tmp/gpu-extender-prometheus-XXXXXX";
    dir_ = mkdtemp(tmpl);
    port_ = port ? port : free_port();
    std::ofstream config(dir_ + "/prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n";
    for (const auto& [job, target] : jobs)
      config << "  - job_name: " << job << "\n    static_configs:\n      - targets: ['127.0.0.1:" << target << "']\n";
    config.close();
    const int log = open((dir_ + "/prometheus.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = spawn_child({"prometheus", "--config.file=" + dir_ + "/prometheus.yml", "--storage.tsdb.path=" + dir_ + "/data",
                        "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"},
                       log, /*search_path=*/true);
    close(log);
  }
  ~PrometheusServer() {
    stop();
    std::system(("rm -rf " + dir_).c_str());
  }
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;
  void stop() {
    if (pid_ <= 0) return;
    stop_child(pid_);
    pid_ = -1;
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
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
  std::string log() const { return read_file(dir_ + "/prometheus.log"); }

 private:
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace test_support
