// Every listener of the real binary takes the same bad input and survives it alike: the verbs' port, the
// metrics port and the admission webhook's HTTPS port, each sent deep JSON, a gzip bomb, a 200 MiB chunked
// body, a body where none is taken, and a crowd of slow clients. After each, the process is alive, its
// memory peak is bounded (the chart's limit is 1 Gi), and every port still answers.
#include <httplib.h>
#include <zlib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "raw_connection.h"
#include "tls_connection.h"

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::RawConnection;
using test_support::TestCertificate;
using test_support::TlsConnection;

namespace {

constexpr size_t kMiB = 1024 * 1024;

// `inflated` bytes of white space, gzip-compressed: about a thousandth of that on the wire.
std::string gzip_bomb(size_t inflated) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);  // +16: a gzip wrapper
  const std::string block(kMiB, ' ');
  std::string out;
  char buf[65536];
  for (size_t done = 0; done < inflated; done += block.size()) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
    z.avail_in = static_cast<uInt>(block.size());
    const int flush = done + block.size() >= inflated ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      deflate(&z, flush);
      out.append(buf, sizeof buf - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  return out;
}

// The process's peak resident set (VmHWM) in MiB.
double peak_rss_mib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  FAIL("no VmHWM for pid " << pid);
  return 0;
}

// One listening port as a client reaches it: plain or TLS, and the path that takes a body there ("" when
// none does).
struct Door {
  std::string name;
  int port;
  bool tls;
  std::string body_path;
};

// A small review the webhook mutates: what the API server sends for a GPU pod.
const std::string kReview =
    R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r-1","operation":"CREATE",)"
    R"("kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},)"
    R"("object":{"metadata":{"name":"w","namespace":"train","annotations":{"gpu.nvidia.com/model":"H100"}},)"
    R"("spec":{"schedulerName":"gpu-scheduler","containers":[{"name":"c","image":"x",)"
    R"("resources":{"limits":{"nvidia.com/gpu":"8"}}}]}}}})";

// Sends `request` on a fresh connection to `door` and reads until the server closes (or 15 s pass).
std::string round_trip(const Door& door, const std::string& request) {
  if (door.tls) {
    TlsConnection c(door.port);
    c.send_all(request);
    return c.read_until_close();
  }
  RawConnection c(door.port);
  c.send_all(request);
  return c.read_until_close();
}

std::string post_head(const Door& door, const std::string& path, const std::string& headers) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(door.port) +
         "\r\nContent-Type: application/json\r\nConnection: close\r\n" + headers + "\r\n";
}

// A 200 MiB chunked body, 64 KiB a chunk, streamed until the server stops taking it; what came back.
template <class Connection>
std::string stream_chunked(Connection& c, const std::string& head, size_t total, size_t* sent) {
  if (!c.send_all(head)) return "";
  const std::string piece(64 * 1024, ' ');
  char size_line[16];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", piece.size());
  const std::string chunk = size_line + piece + "\r\n";
  for (*sent = 0; *sent < total; *sent += piece.size())
    if (!c.send_all(chunk)) break;
  if (*sent >= total) c.send_all("0\r\n\r\n");
  return c.read_until_close();
}

std::string chunked_exchange(const Door& door, const std::string& head, size_t total, size_t* sent) {
  if (door.tls) {
    TlsConnection c(door.port);
    return stream_chunked(c, head, total, sent);
  }
  RawConnection c(door.port);
  return stream_chunked(c, head, total, sent);
}

int status_of(const std::string& answer) {
  return answer.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(answer.substr(9, 3)) : 0;
}

// Every door answers a real request with 200 (a probe, or the webhook's review): the process is alive and
// no port is wedged.
void every_door_answers(const std::vector<Door>& doors) {
  for (const Door& door : doors) {
    INFO(door.name);
    const std::string request =
        door.tls ? post_head(door, "/mutate-pods", "Content-Length: " + std::to_string(kReview.size()) + "\r\n") + kReview
                 : "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    CHECK(status_of(round_trip(door, request)) == 200);
  }
}

// The memory bound checked after each attack: what the chart's 1 Gi limit leaves a real request, with
// room for the verbs' own 96 MiB body limit. ASan holds freed memory in quarantine on purpose: there the
// inputs are still sent and survived, the peak only printed.
void check_peak(pid_t pid, const std::string& after) {
  const double peak = peak_rss_mib(pid);
  WARN("peak RSS after " << after << ": " << peak << " MiB");
#ifndef GPU_EXTENDER_SANITIZED
  CHECK(peak < 320);
#endif
}

struct ThreePorts {
  int metrics_port = test_support::free_port();
  int webhook_port = test_support::free_port();
  ExtenderProcess process;
  std::vector<Door> doors;
  explicit ThreePorts(std::vector<std::string> extra = {})
      : process([&] {
          const auto& cert = TestCertificate::get();
          std::vector<std::string> args{"--metrics-port", std::to_string(metrics_port), "--webhook-port",
                                        std::to_string(webhook_port), "--webhook-tls-cert-file", cert.cert_file,
                                        "--webhook-tls-key-file", cert.key_file};
          args.insert(args.end(), extra.begin(), extra.end());
          return args;
        }()) {
    doors = {{"verbs", process.port(), false, "/filter"},
             {"metrics", metrics_port, false, ""},
             {"webhook", webhook_port, true, "/mutate-pods"}};
  }
};

}  // namespace

TEST_CASE("every listener: deep JSON is a 400 naming the depth, never a crash") {
  test_support::FakeApiServer api;  // /preempt reads its body only with a cluster view
  ThreePorts p(api.extender_args());
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string args = R"({"Pod":{"metadata":{"name":"p","annotations":)" + deep + "}}}";
  for (const std::string verb : {"/filter", "/prioritize", "/bind", "/preempt"}) {
    INFO(verb);
    const std::string answer = round_trip(p.doors[0], post_head(p.doors[0], verb, "Content-Length: " +
                                                               std::to_string(args.size()) + "\r\n") + args);
    CHECK(status_of(answer) == 400);
    CHECK(answer.find("nested") != std::string::npos);
  }
  // The same depth inside a review's object, where the webhook's parser would recurse.
  const std::string review = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":)" +
                             deep + "}}";
  const std::string answer = round_trip(p.doors[2], post_head(p.doors[2], "/mutate-pods", "Content-Length: " +
                                                             std::to_string(review.size()) + "\r\n") + review);
  CHECK(status_of(answer) == 400);
  CHECK(answer.find("nested more than 128 deep") != std::string::npos);
  every_door_answers(p.doors);
}

TEST_CASE("every listener: a gzip bomb is cut at the limit as decoded, or never read") {
  ThreePorts p;
  const std::string bomb = gzip_bomb(300 * kMiB);
  REQUIRE(bomb.size() < kMiB);  // about 300 KB on the wire
  const std::string headers = "Content-Encoding: gzip\r\nContent-Length: " + std::to_string(bomb.size()) + "\r\n";
  for (const Door& door : {p.doors[2], p.doors[0]}) {  // the webhook (8 MiB limit), then the verbs (96 MiB)
    INFO(door.name);
    CHECK(status_of(round_trip(door, post_head(door, door.body_path, headers) + bomb)) == 413);
    check_peak(p.process.pid(), "a gzip bomb to the " + door.name + " port");
  }
  // The metrics port takes no body anywhere: 405 for /metrics, 404 elsewhere, answered on the head alone
  // (the bomb is never sent: an answer that waited for it would come at the read timeout, as a 408).
  CHECK(status_of(round_trip(p.doors[1], post_head(p.doors[1], "/metrics", headers))) == 405);
  CHECK(status_of(round_trip(p.doors[1], post_head(p.doors[1], "/anything", headers))) == 404);
  check_peak(p.process.pid(), "a gzip bomb to the metrics port");
  every_door_answers(p.doors);
}

TEST_CASE("every listener: a 200 MiB chunked body is cut at the limit, and a body where none is taken is never read") {
  ThreePorts p;
  for (const Door& door : {p.doors[2], p.doors[0]}) {
    INFO(door.name);
    size_t sent = 0;
    const std::string answer =
        chunked_exchange(door, post_head(door, door.body_path, "Transfer-Encoding: chunked\r\n"), 200 * kMiB, &sent);
    // The answer may be lost to the reset of a connection whose unread bytes the server dropped; when it
    // arrives, it is the limit's.
    if (!answer.empty()) CHECK(status_of(answer) == 413);
    check_peak(p.process.pid(), std::to_string(sent / kMiB) + " MiB chunked to the " + door.name + " port");
  }
  // A body declared on a path that takes none is answered before a byte of it arrives: the request
  // below never sends its 200 MiB, and the answer comes at once (not at the read timeout).
  for (const Door& door : p.doors) {
    INFO(door.name);
    // A probe path takes GET only (the webhook's port serves none: 404), the review POST only.
    CHECK(status_of(round_trip(door, post_head(door, "/healthz", "Content-Length: 209715200\r\n"))) ==
          (door.tls ? 404 : 405));
    const std::string get_path = door.tls ? "/mutate-pods" : "/healthz";
    const std::string get_with_body =
        "GET " + get_path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 209715200\r\n\r\n";
    CHECK(status_of(round_trip(door, get_with_body)) == (door.tls ? 405 : 400));
  }
  every_door_answers(p.doors);
}

TEST_CASE("every listener: a crowd of slow clients never delays a real request past its caller's timeout") {
  // Few threads, so that the crowd is many times the pool on every port.
  ThreePorts p({"--threads", "2", "--max-threads", "8"});
  std::vector<std::unique_ptr<RawConnection>> crowd;
  for (const Door& door : p.doors)
    for (int k = 0; k < 150; ++k) crowd.push_back(std::make_unique<RawConnection>(door.port));
  // Each sends the start of a request (for the webhook, of a TLS record) and then a byte every 200 ms.
  std::atomic<bool> stop{false};
  std::thread trickler([&] {
    for (auto& c : crowd) c->send_all("\x16\x03\x01\x02\x00");
    while (!stop) {
      for (auto& c : crowd) c->send_all("P");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the pools are full of them

  // The API server's webhook timeout, kube-scheduler's probe and a Prometheus scrape: each within 5 s.
  const auto& cert = TestCertificate::get();
  httplib::SSLClient api_server("127.0.0.1", p.webhook_port);
  api_server.set_ca_cert_path(cert.cert_file.c_str());
  api_server.set_connection_timeout(std::chrono::seconds(5));
  api_server.set_read_timeout(std::chrono::seconds(5));
  auto reviewed = api_server.Post("/mutate-pods", kReview, "application/json");
  REQUIRE(reviewed);
  CHECK(reviewed->status == 200);
  CHECK(json::parse(reviewed->body)["response"]["uid"] == "r-1");
  for (const int port : {p.process.port(), p.metrics_port}) {
    INFO(port);
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(std::chrono::seconds(5));
    client.set_read_timeout(std::chrono::seconds(5));
    auto res = client.Get(port == p.metrics_port ? "/metrics" : "/readyz");
    REQUIRE(res);
    CHECK(res->status == 200);
  }
  stop = true;
  trickler.join();
  crowd.clear();
  every_door_answers(p.doors);
}
