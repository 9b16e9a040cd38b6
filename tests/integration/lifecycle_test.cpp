// Graceful shutdown and policy hot reload, on the real binary.
#include <httplib.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "../unit/host_scores.h"
#include "../unit/test_support.h"
#include "extender_process.h"
#include "http_support.h"
#include "raw_connection.h"
#include "metrics_support.h"

using nlohmann::json;
using test_support::ExtenderProcess;

namespace {

int status_of(int port, const char* path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(1));
  auto res = client.Get(path);
  return res ? res->status : -1;
}

// A raw connection that sends a request in two parts, to hold a request in flight.
class SlowRequest {
 public:
  SlowRequest(int port, const std::string& body) : connection_(port), body_(body) {
    const std::string head = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(body_.size()) + "\r\nConnection: close\r\n\r\n";
    REQUIRE(connection_.send_all(head + body_.substr(0, body_.size() / 2)));
  }
  // Sends the rest and returns the answer's status line.
  std::string finish() {
    REQUIRE(connection_.send_all(body_.substr(body_.size() / 2)));
    const std::string answer = connection_.read_until_close();
    return answer.substr(0, answer.find("\r\n"));
  }

 private:
  test_support::RawConnection connection_;
  std::string body_;
};

std::string temp_dir() {
  char tmpl[] = "/tmp/gpu-extender-life-XXXXXX";
  return mkdtemp(tmpl);
}

// Writes `text` as a ConfigMap volume does: a new timestamped folder, then an atomic swap of ..data.
void write_like_configmap(const std::string& dir, const std::string& text, int generation) {
  const std::string version = "..v" + std::to_string(generation);
  std::system(("mkdir -p " + dir + "/" + version).c_str());
  std::ofstream(dir + "/" + version + "/policy.yaml") << text;
  std::system(("ln -sfn " + version + " " + dir + "/..data_tmp && mv -T " + dir + "/..data_tmp " + dir + "/..data").c_str());
  std::system(("[ -L " + dir + "/policy.yaml ] || ln -s ..data/policy.yaml " + dir + "/policy.yaml").c_str());
}

std::map<std::string, int> scores(int port) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Post("/prioritize", test_support::sample("filter-gpu-full.json"), "application/json");
  if (!res || res->status != 200) return {};
  return test_support::scores_by_host(res->body, test_support::sample("filter-gpu-full.json"));
}

using test_support::eventually;

}  // namespace

TEST_CASE("lifecycle: SIGTERM makes /readyz unready, drains, finishes in-flight requests, exits 0") {
  ExtenderProcess p({"--shutdown-drain-seconds", "2"});
  REQUIRE(status_of(p.port(), "/readyz") == 200);
  SlowRequest in_flight(p.port(), test_support::sample("filter-gpu-full.json"));
  kill(p.pid(), SIGTERM);
  CHECK(eventually([&] { return status_of(p.port(), "/readyz") == 503; }));
  CHECK(status_of(p.port(), "/healthz") == 200);  // still serving during the drain
  CHECK(in_flight.finish() == "HTTP/1.1 200 OK");
  CHECK(p.wait_exit(std::chrono::seconds(10)) == 0);
  CHECK(status_of(p.port(), "/healthz") == -1);  // no longer accepting
  CHECK(p.logged("draining for 2s"));
}

TEST_CASE("lifecycle: SIGINT stops the same way") {
  ExtenderProcess p;
  kill(p.pid(), SIGINT);
  CHECK(p.wait_exit(std::chrono::seconds(10)) == 0);
}

TEST_CASE("lifecycle: the policy reloads when its ConfigMap file changes, a bad one is refused") {
  const std::string dir = temp_dir();
  const std::string base = test_support::read_file(test_support::source_path("extender-config/policy.yaml"));
  write_like_configmap(dir, base, 1);
  ExtenderProcess p({"--policy", dir + "/policy.yaml", "--policy-reload-seconds", "1"});
  const auto before = scores(p.port());
  // The default policy's scores, derived from the sample's nodes by the README's formulas.
  REQUIRE(before == test_support::default_policy_scores(json::parse(test_support::sample("filter-gpu-full.json")),
                                                        {"a100-80g-4g", "a100-2g", "a100-8g"}));

  // Idleness only: the 8-GPU node at 10% busy now beats the 2-GPU node at 50%.
  write_like_configmap(dir, "scorers:\n  - name: gpuIdle\n    weight: 1\n", 2);  // other keys: the defaults
  REQUIRE(eventually([&] { return scores(p.port()).at("a100-8g") > before.at("a100-8g"); }));
  const auto after = scores(p.port());
  CHECK(after.at("a100-8g") > after.at("a100-2g"));
  CHECK(test_support::value_of(test_support::scrape(p.port()), R"(gpu_extender_config_reloads_total{result="success"})") == 1);

  write_like_configmap(dir, "scorers: [{name: gpuFit, weight: heavy}]\n", 3);
  CHECK(eventually([&] {
    return test_support::value_of(test_support::scrape(p.port()), R"(gpu_extender_config_reloads_total{result="failure"})") == 1;
  }));
  CHECK(scores(p.port()) == after);  // the running policy stays
  write_like_configmap(dir, "resources:\n  gpu: example.com/tpu\n", 4);
  CHECK(eventually([&] {
    return test_support::value_of(test_support::scrape(p.port()), R"(gpu_extender_config_reloads_total{result="failure"})") == 2;
  }));
  CHECK(p.logged("those need a restart"));
  CHECK(scores(p.port()) == after);
  std::system(("rm -rf " + dir).c_str());
}

namespace {
// The verb port's connection gauges, read from --metrics-port (which has threads of its own).
double connections(int metrics_port, const char* state) {
  return test_support::value_of(test_support::scrape(metrics_port),
                                std::string("gpu_extender_http_connections{state=\"") + state + "\"}");
}
bool wait_for(const std::function<bool()>& condition) { return eventually(condition, std::chrono::seconds(10)); }
}  // namespace

TEST_CASE("bounds: a stalled half request is cut off and frees its worker") {
  const int metrics_port = test_support::free_port();
  ExtenderProcess p({"--threads", "1", "--max-threads", "1", "--read-timeout-seconds", "1", "--metrics-port",
                     std::to_string(metrics_port)});
  SlowRequest stalled(p.port(), test_support::sample("filter-gpu-full.json"));  // half sent, then silence
  REQUIRE(wait_for([&] { return connections(metrics_port, "busy") == 1; }));   // it holds the only worker...
  REQUIRE(wait_for([&] { return connections(metrics_port, "busy") == 0; }));   // ...until the read timeout
  httplib::Client client("127.0.0.1", p.port());
  client.set_read_timeout(std::chrono::seconds(3));
  auto res = client.Get("/healthz");
  REQUIRE(res);
  CHECK(res->status == 200);
}

TEST_CASE("bounds: past the connection queue, requests get 503 with Retry-After") {
  const int metrics_port = test_support::free_port();
  ExtenderProcess p({"--threads", "1", "--max-threads", "1", "--max-queued-connections", "0", "--read-timeout-seconds",
                     "5", "--metrics-port", std::to_string(metrics_port)});
  const std::string body = test_support::sample("filter-gpu-full.json");
  SlowRequest holder(p.port(), body);  // holds the only worker
  REQUIRE(wait_for([&] { return connections(metrics_port, "busy") == 1; }));
  SlowRequest second(p.port(), body), third(p.port(), body);  // both wait for the worker
  REQUIRE(wait_for([&] { return connections(metrics_port, "waiting") == 2; }));
  CHECK(holder.finish() == "HTTP/1.1 200 OK");
  // The next in line reaches the worker with another still waiting: shed.
  const std::string a = second.finish(), b = third.finish();
  CHECK(((a == "HTTP/1.1 503 Service Unavailable" && b == "HTTP/1.1 200 OK") ||
         (b == "HTTP/1.1 503 Service Unavailable" && a == "HTTP/1.1 200 OK")));
  CHECK(p.logged("connections waiting"));
}

namespace {
long proc_status_value(pid_t pid, const std::string& key) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}
}  // namespace

TEST_CASE("bounds: 128 idle and 64 half-sent connections do not starve /filter or /healthz") {
  ExtenderProcess p;
  const long threads_before = proc_status_value(p.pid(), "Threads");
  const long rss_before = proc_status_value(p.pid(), "VmRSS");
  std::vector<int> idle;
  for (int i = 0; i < 128; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(p.port()));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    idle.push_back(fd);  // connected, never a byte sent
  }
  const std::string body = test_support::sample("filter-gpu-full.json");
  std::vector<std::unique_ptr<SlowRequest>> half_sent;
  for (int i = 0; i < 64; ++i) half_sent.push_back(std::make_unique<SlowRequest>(p.port(), body));
  // Every connection has its own thread once the server has accepted them all: the precondition of
  // the test (the workers are all taken by connections that send nothing useful).
  REQUIRE(test_support::eventually([&] { return proc_status_value(p.pid(), "Threads") >= threads_before + 150; }));
  const long threads_held = proc_status_value(p.pid(), "Threads");
  const long rss_held = proc_status_value(p.pid(), "VmRSS");

  httplib::Client client("127.0.0.1", p.port());
  // Answered at all is the criterion (a starved server never answers); how fast is bench/'s business.
  client.set_read_timeout(std::chrono::seconds(30));
  client.set_connection_timeout(std::chrono::seconds(30));
  auto filter = client.Post("/filter", body, "application/json");
  REQUIRE(filter);
  CHECK(filter->status == 200);
  auto health = client.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
  // The cost, for the record (docs/security.md): a thread and a few KiB each.
  WARN("threads " << threads_before << " -> " << threads_held << ", resident " << rss_before << " -> " << rss_held
                  << " KiB with 192 connections held");
  for (int fd : idle) close(fd);
}

TEST_CASE("bounds: large bodies in flight wait for the memory budget, then get 503, never an OOM") {
  const int metrics_port = test_support::free_port();
  // Room for exactly one 1 MiB body (6 bytes charged per body byte).
  ExtenderProcess p({"--max-body-bytes", "1048576", "--memory-budget-bytes", "6291456", "--metrics-port",
                     std::to_string(metrics_port)});
  auto metric = [&](const std::string& series) {
    return test_support::value_of(test_support::scrape(metrics_port), series);
  };
  std::string big = test_support::sample("filter-gpu-full.json");
  big.append(1048576 - big.size(), ' ');  // 1 MiB: charged the whole budget
  SlowRequest holder(p.port(), big);      // half sent: holds its charge
  REQUIRE(wait_for([&] { return metric("gpu_extender_memory_budget_bytes{state=\"in_use\"}") == 6291456; }));

  // A second body finds no room, waits, and is refused after 5 s with Retry-After.
  httplib::Client client("127.0.0.1", p.port());
  client.set_read_timeout(std::chrono::seconds(30));
  auto refused = client.Post("/filter", test_support::sample("filter-gpu-full.json"), "application/json");
  REQUIRE(refused);
  CHECK(refused->status == 503);
  CHECK(refused->get_header_value("Retry-After") == "1");
  CHECK(refused->body.find("--memory-budget-bytes") != std::string::npos);
  CHECK(metric("gpu_extender_memory_budget_waits_total") == 1);
  CHECK(metric("gpu_extender_memory_budget_refusals_total") == 1);

  // The holder is served, its charge given back, and the next body goes through at once.
  CHECK(holder.finish() == "HTTP/1.1 200 OK");
  REQUIRE(wait_for([&] { return metric("gpu_extender_memory_budget_bytes{state=\"in_use\"}") == 0; }));
  auto served = client.Post("/filter", test_support::sample("filter-gpu-full.json"), "application/json");
  REQUIRE(served);
  CHECK(served->status == 200);
}

TEST_CASE("cli: --help lists the subcommands, and each subcommand's --help prints its usage and exits 0") {
  const auto top = test_support::run_binary({"--help"});
  CHECK(top.exit_code == 0);
  CHECK(top.output.find("gpu-extender explain [flags]") != std::string::npos);
  CHECK(top.output.find("gpu-extender simulate [flags]") != std::string::npos);
  for (const std::string command : {"explain", "simulate"}) {
    const auto help = test_support::run_binary({command, "--help"});
    INFO(help.output);
    CHECK(help.exit_code == 0);
    CHECK(help.output.rfind("Usage: gpu-extender " + command, 0) == 0);
  }
  CHECK(test_support::run_binary({"explain", "-h"}).output.find("--kubeconfig FILE") != std::string::npos);
}
