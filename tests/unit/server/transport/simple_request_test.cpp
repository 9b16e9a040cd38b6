#include "server/transport/simple_request.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

using gpu_extender::parse_simple_head;

const std::vector<std::string> kPaths = {"/filter", "/prioritize", "/bind"};

// A head as kube-scheduler v1.26 (Go's net/http) writes it, with `extra` header lines before the end.
std::string go_head(const std::string& path, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:8888\r\nUser-Agent: Go-http-client/1.1\r\n"
         "Content-Length: 2471\r\nContent-Type: application/json\r\n" + extra + "Accept-Encoding: gzip\r\n\r\n";
}

}  // namespace

TEST_CASE("simple request: kube-scheduler's head is read where it lies, its body left after it") {
  const std::string head = go_head("/prioritize");
  const std::string bytes = head + "{\"Pod\":";  // the body's first bytes came with it
  const auto parsed = parse_simple_head(bytes, 65536, kPaths);
  REQUIRE(parsed);
  CHECK(parsed->path == "/prioritize");
  CHECK(parsed->path_index == 1);  // kPaths[1]
  CHECK(parsed->content_length == 2471);
  CHECK(parsed->head_bytes == head.size());
  CHECK_FALSE(parsed->client_closes);
}

TEST_CASE("simple request: Connection close, as cpp-httplib reads it") {
  CHECK(parse_simple_head(go_head("/bind", "Connection: close\r\n"), 65536, kPaths)->client_closes);
  CHECK(parse_simple_head(go_head("/bind", "connection:\tclose \r\n"), 65536, kPaths)->client_closes);
  CHECK_FALSE(parse_simple_head(go_head("/bind", "Connection: keep-alive\r\n"), 65536, kPaths)->client_closes);
  CHECK_FALSE(parse_simple_head(go_head("/bind", "Connection: Close\r\n"), 65536, kPaths)->client_closes);
  // The first Connection header is the one cpp-httplib looks at.
  CHECK_FALSE(parse_simple_head(go_head("/bind", "Connection: x\r\nConnection: close\r\n"), 65536, kPaths)->client_closes);
  // cpp-httplib would percent-decode the value: left to it.
  CHECK_FALSE(parse_simple_head(go_head("/bind", "Connection: clos%65\r\n"), 65536, kPaths));
}

TEST_CASE("simple request: anything else is left to cpp-httplib") {
  const std::string ok = go_head("/filter");
  REQUIRE(parse_simple_head(ok, 65536, kPaths));
  CHECK_FALSE(parse_simple_head(ok.substr(0, ok.size() - 1), 65536, kPaths));  // not all here yet
  CHECK_FALSE(parse_simple_head(ok, ok.size() - 1, kPaths));                    // past the header limit
  CHECK(parse_simple_head(ok, ok.size(), kPaths));
  CHECK_FALSE(parse_simple_head(go_head("/preempt"), 65536, kPaths));   // not one of the paths
  CHECK_FALSE(parse_simple_head(go_head("/filter?x=1"), 65536, kPaths));  // a query
  CHECK_FALSE(parse_simple_head(go_head("/fil%74er"), 65536, kPaths));   // percent-encoded
  std::string put = ok;
  put.replace(0, 4, "PUT ");
  CHECK_FALSE(parse_simple_head(put, 65536, kPaths));
  std::string http10 = ok;
  http10.replace(http10.find("HTTP/1.1"), 8, "HTTP/1.0");
  CHECK_FALSE(parse_simple_head(http10, 65536, kPaths));
  for (const std::string header : {"Transfer-Encoding: chunked\r\n", "transfer-encoding: identity\r\n",
                                   "Expect: 100-continue\r\n", "Content-Encoding: gzip\r\n",
                                   "Content-Length: 2471\r\n",  // twice: ambiguous framing
                                   "X-Bad Name: 1\r\n", ": no name\r\n", "no colon\r\n", "X-Ctl: a\x01z\r\n",
                                   "X-Bare-Lf: 1\n"}) {
    INFO(header);
    CHECK_FALSE(parse_simple_head(go_head("/filter", header), 65536, kPaths));
  }
  std::string no_length = ok;
  no_length.erase(no_length.find("Content-Length"), std::string("Content-Length: 2471\r\n").size());
  CHECK_FALSE(parse_simple_head(no_length, 65536, kPaths));
  std::string bad_length = ok;
  bad_length.replace(bad_length.find("2471"), 4, "+247");
  CHECK_FALSE(parse_simple_head(bad_length, 65536, kPaths));
}

TEST_CASE("simple request: status lines read as cpp-httplib writes them") {
  CHECK(std::string(gpu_extender::status_reason(200)) == "OK");
  CHECK(std::string(gpu_extender::status_reason(413)) == "Payload Too Large");
  CHECK(std::string(gpu_extender::status_reason(503)) == "Service Unavailable");
  CHECK(std::string(gpu_extender::status_reason(599)) == "Internal Server Error");
}
