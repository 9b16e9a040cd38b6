// The real binary's HTTP at its edges: bad bodies and paths, pipelining, bounded headers and bodies (chunked and gzip
// included), slow clients, ambiguous framing, and invalid JSON wherever it stands.
#include <arpa/inet.h>
#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "../unit/test_support.h"
#include "gpu_extender/wire/wire.h"
#include "extender_process.h"
#include "http_support.h"
#include "raw_connection.h"

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::RawConnection;
using test_support::post;

TEST_CASE("http: bad input gets a 4xx whose Error names the field, and the server goes on") {
  ExtenderProcess p({"--max-body-bytes", "65536"});
  const std::string pod = R"({"metadata":{"name":"p","namespace":"d"},"spec":{}})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"Pod\":", "malformed JSON"},
      {"not json", "expected a JSON object"},
      {"[]", "expected a JSON object"},
      {"{\"NodeNames\":[]}", "Pod: missing"},
      {"{\"Pod\":" + pod + "}", "Nodes: neither Nodes nor NodeNames"},
      {"{\"Pod\":" + pod + ",\"Nodes\":[]}", "Nodes: expected an object"},
      {"{\"Pod\":\"x\",\"NodeNames\":[]}", "Pod: expected an object"},
      {"{\"Pod\":" + pod + ",\"NodeNames\":[1]}", "NodeNames[0]: expected a string"},
      {"{\"Pod\":" + pod +
           R"(,"Nodes":{"items":[{"metadata":{"name":"n"},"status":{"capacity":{"nvidia.com/gpu":"1.2.3"}}}]}})",
       "Nodes.items[0].status.capacity.nvidia.com/gpu: invalid quantity"},
      {"", "empty request body"},
  };
  for (const std::string verb : {"/filter", "/prioritize"}) {
    for (const auto& [body, error] : cases) {
      INFO(verb << " " << body);
      auto res = post(p, verb, body);
      REQUIRE(res);
      CHECK(res->status == 400);
      CHECK(json::parse(res->body)["Error"].get<std::string>().find(error) != std::string::npos);
    }
  }
  auto res = post(p, "/bind", R"({"PodName":"p"})");
  REQUIRE(res);
  CHECK(res->status == 400);
  CHECK(json::parse(res->body)["Error"] == "PodNamespace: missing");

  res = post(p, "/filter", std::string(70000, ' '));
  REQUIRE(res);
  CHECK(res->status == 413);
  CHECK(json::parse(res->body)["Error"].get<std::string>().find("--max-body-bytes") != std::string::npos);

  httplib::Client client("127.0.0.1", p.port());
  auto health = client.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(p.stop() == 0);
}

TEST_CASE("http: unknown paths 404 and wrong methods 405, with JSON bodies") {
  ExtenderProcess p;
  httplib::Client client("127.0.0.1", p.port());
  auto res = client.Get("/nothing");
  REQUIRE(res);
  CHECK(res->status == 404);
  CHECK(json::parse(res->body)["Error"].get<std::string>().find("/nothing") != std::string::npos);
  res = client.Get("/filter");
  REQUIRE(res);
  CHECK(res->status == 405);
  CHECK(res->get_header_value("Allow") == "POST");
  CHECK(json::parse(res->body).contains("Error"));
  res = client.Post("/healthz", "{}", "application/json");
  REQUIRE(res);
  CHECK(res->status == 405);
  CHECK(res->get_header_value("Allow") == "GET");
  for (const char* path : {"/healthz", "/readyz", "/version"}) {
    res = client.Get(path);
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK_NOTHROW(json::parse(res->body));
  }
  CHECK(json::parse(client.Get("/version")->body)["policy"] == "embedded default policy");
}

namespace {
// Sends `request` as it is on a new connection and returns everything the server answers until it
// closes (the request asks it to).
std::string raw_exchange(int port, const std::string& request) {
  RawConnection connection(port);
  REQUIRE(connection.send_all(request));
  return connection.read_until_close();
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++count;
  return count;
}
}  // namespace

// What a request's answer says, its request id (a counter) set aside.
std::string without_request_id(std::string answer) {
  const size_t at = answer.find("X-Request-Id: ");
  if (at != std::string::npos) answer.erase(at, answer.find("\r\n", at) - at);
  return answer;
}

TEST_CASE("http: kube-scheduler's plain requests, read without cpp-httplib, are answered as cpp-httplib answers") {
  ExtenderProcess p({"--max-body-bytes", "100000"});
  const std::string good = test_support::sample("filter-gpu-full.json");
  // (body, declared length, headers besides Host and Content-Length)
  const std::vector<std::tuple<std::string, size_t, std::string>> cases = {
      {good, good.size(), "Content-Type: application/json\r\nConnection: close\r\n"},
      {"{\"Pod\":", 7, "Connection: close\r\n"},
      {"", 200000, ""},                         // declared past --max-body-bytes: 413, unread, closed
      {good, good.size(), "Connection: close\r\n"},
      {good, good.size(), "Connection:  keep-alive \r\nAccept-Encoding: gzip\r\n"},  // then closed by the next
  };
  for (const auto& [body, length, headers] : cases) {
    // A query string is not kube-scheduler's: that request goes through cpp-httplib's parser, and the
    // route is the same.
    std::vector<std::string> answers;
    for (const std::string path : {"/filter", "/filter?via=cpp-httplib"}) {
      std::string request = "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(length) +
                            "\r\n" + headers + "\r\n" + body;
      if (headers.find("keep-alive") != std::string::npos)
        request += "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
      answers.push_back(without_request_id(raw_exchange(p.port(), request)));
    }
    INFO("declared " << length << ", headers " << headers << ": " << answers[0]);
    CHECK(answers[0].rfind("HTTP/1.1 ", 0) == 0);
    CHECK(answers[0] == answers[1]);
  }
}

TEST_CASE("http: pipelined requests are all answered, in order") {
  ExtenderProcess p;
  const std::string body = test_support::sample("filter-gpu-full.json");
  const std::string request = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  const std::string last = "GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  // Three requests in one write: the server reads ahead into the second and third while on the first.
  const std::string answer = raw_exchange(p.port(), request + request + last);
  CHECK(count_of(answer, "HTTP/1.1 200 OK\r\n") == 3);
  CHECK(count_of(answer, "\"NodeNames\":[\"a100-8g\",\"a100-2g\",\"a100-80g-4g\"]") == 2);
  CHECK(answer.find("\"version\"") > answer.rfind("NodeNames"));
}

TEST_CASE("http: a large body is read whole however its pieces come, and a stalled one is cut off") {
  // The rest of a body past 32 KB is waited for whole (SO_RCVLOWAT) for a short while, then read as it
  // comes. A filter body padded with 100 KB of spaces (valid JSON): the answer is the unpadded one's.
  ExtenderProcess p({"--read-timeout-seconds", "1"});
  const std::string good = test_support::sample("filter-gpu-full.json");
  std::string padded = good;
  padded.insert(padded.rfind('}'), std::string(100000, ' '));
  const auto request_of = [](const std::string& body) {
    return "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  const std::string request = request_of(padded);
  const std::string expected = without_request_id(raw_exchange(p.port(), request_of(good)));
  REQUIRE(expected.rfind("HTTP/1.1 200", 0) == 0);
  // Headers and the body's first bytes in one write (Go's 4 KB buffer), then pieces of `piece` bytes
  // `pause` apart, stopping after `upto` bytes of the request.
  const auto send_in_pieces = [&](size_t piece, std::chrono::milliseconds pause, size_t upto) {
    RawConnection connection(p.port());
    REQUIRE(connection.send_all(request.substr(0, 4096)));
    for (size_t at = 4096; at < upto; at += piece) {
      std::this_thread::sleep_for(pause);
      REQUIRE(connection.send_all(request.substr(at, std::min(piece, upto - at))));
    }
    return connection.read_until_close();
  };
  SECTION("as Go's transport writes it: 32 KB at a time, promptly") {
    CHECK(without_request_id(send_in_pieces(32768, std::chrono::milliseconds(1), request.size())) == expected);
  }
  SECTION("slower than the server waits for the rest") {
    CHECK(without_request_id(send_in_pieces(8192, std::chrono::milliseconds(40), request.size())) == expected);
  }
  SECTION("a byte short of its length, then silence: the read timeout ends it") {
    const auto start = std::chrono::steady_clock::now();
    const std::string answer = send_in_pieces(32768, std::chrono::milliseconds(1), request.size() - 1);
    CHECK(answer.rfind("HTTP/1.1 200", 0) == std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));  // the 15 s client timeout not reached
  }
}

TEST_CASE("http: Expect 100-continue is answered before the body is sent") {
  // curl asks it for a body over 1 MB and waits up to a second for it: held, it cost every such POST.
  ExtenderProcess p;
  const std::string body = test_support::sample("filter-gpu-full.json");
  RawConnection connection(p.port());
  REQUIRE(connection.send_all("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: "
                              "100-continue\r\nConnection: close\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n"));
  // Nothing of the body sent yet: the interim answer must come by itself (the 15 s receive timeout
  // ends the wait if it never does).
  const std::string interim = connection.read_some();
  CHECK(interim.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
  REQUIRE(connection.send_all(body));
  const std::string answer = interim + connection.read_until_close();
  CHECK(answer.find("HTTP/1.1 200 OK\r\n") != std::string::npos);
  CHECK(answer.find("\"NodeNames\":[\"a100-8g\"") != std::string::npos);
}

TEST_CASE("http: the header section is bounded in bytes, whatever the count") {
  ExtenderProcess p({"--max-header-bytes", "16384"});
  std::string headers;
  for (int i = 0; i < 2000; ++i) headers += "X-Filler-" + std::to_string(i) + ": " + std::string(40, 'x') + "\r\n";
  RawConnection connection(p.port());
  connection.send_all("GET /healthz HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n");  // ~110 KB
  const std::string answer = connection.read_until_close();
  CHECK(answer.rfind("HTTP/1.1 431", 0) == 0);
  CHECK(answer.find("--max-header-bytes (16384 bytes)") != std::string::npos);
  // Under the limit, the same kind of request is served.
  CHECK(raw_exchange(p.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n" + headers.substr(0, 8000) +
                                   "Connection: close\r\n\r\n")
            .rfind("HTTP/1.1 200", 0) == 0);
}

TEST_CASE("http: a request trickled a byte at a time is cut off at its deadline (slowloris)") {
  // One byte every 200 ms never trips the 10 s read timeout; the deadlines from the first byte do.
  ExtenderProcess p({"--header-timeout-seconds", "1", "--request-timeout-seconds", "2"});
  SECTION("headers") {
    RawConnection connection(p.port());
    connection.trickle("POST /filter HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(100, 'x'),
                       std::chrono::milliseconds(200));
    const std::string answer = connection.read_until_close();
    CHECK(answer.rfind("HTTP/1.1 408", 0) == 0);
    CHECK(answer.find("--header-timeout-seconds (1 s)") != std::string::npos);
  }
  SECTION("body") {
    RawConnection connection(p.port());
    const std::string body = test_support::sample("filter-gpu-full.json");
    connection.send_all("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n");
    connection.trickle(body, std::chrono::milliseconds(200));
    const std::string answer = connection.read_until_close();
    CHECK(answer.rfind("HTTP/1.1 408", 0) == 0);
    CHECK(answer.find("--request-timeout-seconds (2 s)") != std::string::npos);
  }
}

TEST_CASE("http: ambiguous framing is a 400, Range is ignored on POST") {
  ExtenderProcess p;
  const std::string body = test_support::sample("filter-gpu-full.json");
  const std::string head = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n";
  std::string answer = raw_exchange(p.port(), head + "Content-Length: " + std::to_string(body.size()) +
                                                  "\r\nContent-Length: 10\r\n\r\n" + body);
  CHECK(answer.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(answer.find("conflicting Content-Length") != std::string::npos);
  answer = raw_exchange(p.port(), head + "Content-Length: " + std::to_string(body.size()) +
                                      "\r\nTransfer-Encoding: chunked\r\n\r\n" + body);
  CHECK(answer.rfind("HTTP/1.1 400", 0) == 0);

  answer = raw_exchange(p.port(), head + "Range: bytes=0-9\r\nContent-Length: " + std::to_string(body.size()) +
                                      "\r\n\r\n" + body);
  CHECK(answer.rfind("HTTP/1.1 200", 0) == 0);
  const std::string answer_body = answer.substr(answer.find("\r\n\r\n") + 4);
  CHECK(json::parse(answer_body)["NodeNames"] == json::array({"a100-8g", "a100-2g", "a100-80g-4g"}));
}

TEST_CASE("http: control characters in names are escaped in the log") {
  ExtenderProcess p;
  json body = json::parse(test_support::sample("filter-gpu-full.json"));
  body["Pod"]["metadata"]["name"] = "evil\n2026-01-01T00:00:00.000+00:00 info forged \x1b[31mred";
  auto res = post(p, "/filter", body.dump());
  REQUIRE(res);
  CHECK(res->status == 200);
  const std::string log = p.log_with("evil\\x0a2026-01-01");
  CHECK(log.find("evil\\x0a2026-01-01") != std::string::npos);
  CHECK(log.find("\n2026-01-01T00:00:00.000+00:00 info forged") == std::string::npos);
  CHECK(log.find('\x1b') == std::string::npos);
}

TEST_CASE("http: --max-body-bytes holds for chunked and gzip bodies, as decoded") {
  ExtenderProcess p({"--max-body-bytes", "4096"});
  // 100 KB of JSON white space and a body: chunked, no Content-Length to check up front.
  const std::string big = std::string(100000, ' ') + test_support::sample("filter-gpu-full.json");
  std::string chunked = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n";
  for (size_t at = 0; at < big.size(); at += 8192) {
    const std::string part = big.substr(at, 8192);
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    chunked += size + part + "\r\n";
  }
  chunked += "0\r\n\r\n";
  std::string answer = raw_exchange(p.port(), chunked);
  CHECK(answer.rfind("HTTP/1.1 413", 0) == 0);
  // The same bytes gzip-compressed are a few hundred bytes on the wire; inflated they are not.
  httplib::Client client("127.0.0.1", p.port());
  client.set_compress(true);
  auto res = client.Post("/filter", big, "application/json");
  REQUIRE(res);
  CHECK(res->status == 413);
  // Small enough: read whole, then judged as JSON (cut mid-way, it is not): a 400 that says so.
  res = post(p, "/filter", test_support::sample("filter-gpu-full.json").substr(0, 4000) + "}");
  REQUIRE(res);
  CHECK(res->status == 400);
  CHECK(json::parse(res->body)["Error"].get<std::string>().find("JSON") != std::string::npos);
}

TEST_CASE("http: more nodes than any cluster has is a 400 that says so") {
  ExtenderProcess p;
  std::string names = "[";
  for (size_t i = 0; i <= gpu_extender::kMaxNodesPerRequest; ++i) names += (i ? ",\"n" : "\"n") + std::to_string(i) + "\"";
  names += "]";
  auto res = post(p, "/filter", R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":)" + names + "}");
  REQUIRE(res);
  CHECK(res->status == 400);
  CHECK(json::parse(res->body)["Error"].get<std::string>().rfind("NodeNames: more than 20000 nodes", 0) == 0);
}

TEST_CASE("http: invalid JSON anywhere in a body is a 400 that names where, read or not") {
  ExtenderProcess p;
  const std::string body = test_support::sample("filter-gpu-full.json");
  // Each case breaks a part the policy never reads, which On Demand parsing would skip unchecked.
  auto broken_at = [&](const std::string& anchor, const std::string& insert) {
    const size_t at = body.find(anchor);
    REQUIRE(at != std::string::npos);
    std::string broken = body;
    broken.insert(at, insert);
    return broken;
  };
  struct Case {
    const char* what;
    std::string body;
    std::string error_prefix;
  };
  const std::vector<Case> cases = {
      // a100-8g passes: its bytes are echoed, so they must be JSON.
      {"an echoed node", broken_at("\"name\":\"a100-8g\"", "\"unread\":[1,,2],"), "Nodes.items[0].metadata.unread"},
      // cpu-only fails: not echoed, still not JSON.
      {"a refused node", broken_at("\"name\":\"cpu-only\"", "\"unread\":tru,"), "Nodes.items[8].metadata.unread"},
      {"the pod", broken_at("\"spec\":", "\"unread\":{\"a\" 1},"), "Pod"},
      {"a key no one reads", broken_at("\"Nodes\":", "\"Extra\":[01],"), "Extra"},
      {"the node list's metadata", broken_at("\"items\":", "\"metadata2\":-,"), "Nodes.metadata2"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto res = post(p, "/filter", c.body);
    REQUIRE(res);
    CHECK(res->status == 400);
    const std::string error = json::parse(res->body)["Error"];
    INFO(error);
    CHECK(error.rfind(c.error_prefix + ": not valid JSON", 0) == 0);
  }
  // The unbroken body, for contrast.
  auto res = post(p, "/filter", body);
  REQUIRE(res);
  CHECK(res->status == 200);
}

