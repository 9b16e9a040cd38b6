#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kube/http_answer.h"

using namespace gpu_extender::kube;

namespace {

// A connection's bytes, handed out at most `step` at a time (the ways a network splits them).
class ScriptedSource final : public ByteSource {
 public:
  ScriptedSource(std::string bytes, size_t step) : bytes_(std::move(bytes)), step_(step) {}
  gpu_extender::Result<size_t> read_some(char* out, size_t size) override {
    if (fail_at_end_ && at_ == bytes_.size()) return gpu_extender::Status::failed("reset");
    const size_t n = std::min({size, step_, bytes_.size() - at_});
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
    return n;
  }
  bool fail_at_end_ = false;

 private:
  std::string bytes_;
  size_t step_;
  size_t at_ = 0;
};

struct Read {
  bool head_ok = false, body_ok = false;
  AnswerHead head;
  std::string body, error;
  std::vector<std::string> pieces;
};

Read read_answer(AnswerReader& reader, uint64_t max_bytes = 1 << 20) {
  Read r;
  const gpu_extender::Result<AnswerHead> head = reader.read_head();
  r.head_ok = head.ok();
  r.error = head.why();
  if (!r.head_ok) return r;
  r.head = *head;
  const gpu_extender::Result<AnswerReader::BodyEnd> body = reader.read_body(r.head, max_bytes, [&](std::string_view data) {
    r.body.append(data);
    r.pieces.emplace_back(data);
    return true;
  });
  r.body_ok = body.ok() && *body == AnswerReader::BodyEnd::kWhole;
  r.error = body.why();
  return r;
}

// One answer read from `bytes` handed out `step` at a time.
Read read_scripted(std::string bytes, size_t step, uint64_t max_bytes = 1 << 20) {
  ScriptedSource source(std::move(bytes), step);
  AnswerReader reader(source);
  return read_answer(reader, max_bytes);
}

const std::string kChunked =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    "b\r\n{\"type\":1}\n\r\n"
    "B;ext=1\r\n{\"type\":2}\n\r\n"
    "0\r\nX-Trailer: t\r\n\r\n";

}  // namespace

TEST_CASE("http answer: a Go server's answers are read whatever way the bytes are split") {
  const std::string created =
      "HTTP/1.1 201 Created\r\nAudit-Id: 1f\r\nCache-Control: no-cache, private\r\ncontent-length: 17\r\n"
      "Content-Type: application/json\r\nDate: Tue, 01 Dec 2026 20:00:00 GMT\r\n\r\n{\"status\":\"Ok\"}\r\n";
  for (size_t step : {size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{100000}}) {
    INFO("bytes at a time: " << step);
    // Two answers back to back on one kept-alive connection, then a chunked one.
    std::string bytes = created;
    bytes.append(created).append(kChunked);
    ScriptedSource source(bytes, step);
    AnswerReader reader(source);
    for (int i = 0; i < 2; ++i) {
      const Read r = read_answer(reader);
      REQUIRE(r.head_ok);
      REQUIRE(r.body_ok);
      CHECK(r.head.status == 201);
      CHECK(r.head.framing == AnswerHead::Framing::kLength);
      CHECK_FALSE(r.head.server_closes);
      CHECK(r.body == "{\"status\":\"Ok\"}\r\n");
    }
    const Read r = read_answer(reader);
    REQUIRE(r.body_ok);
    CHECK(r.head.framing == AnswerHead::Framing::kChunked);
    CHECK(r.body == "{\"type\":1}\n{\"type\":2}\n");
    CHECK(reader.buffered() == 0);  // the trailer and the final empty line consumed
  }
}

TEST_CASE("http answer: interim answers, Connection close, HTTP/1.0, no length, no body") {
  SECTION("a 100 Continue before the answer is skipped") {
    const Read r = read_scripted("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\nno", 5);
    CHECK(r.head.status == 409);
    CHECK(r.body == "no");
  }
  SECTION("Connection: close, in any case and among other tokens") {
    const Read r = read_scripted("HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n", 100);
    CHECK(r.head.server_closes);
    CHECK(r.body.empty());
  }
  SECTION("HTTP/1.0 closes unless it says keep-alive; a status line without a reason") {
    const Read r = read_scripted("HTTP/1.0 200\r\nContent-Length: 1\r\n\r\nx", 100);
    CHECK(r.head.status == 200);
    CHECK(r.head.server_closes);
    CHECK(r.body == "x");
  }
  SECTION("no length: the body ends with the connection, which is then not reusable") {
    const Read r = read_scripted("HTTP/1.1 500 Internal Server Error\r\n\r\nsomething broke", 4);
    REQUIRE(r.body_ok);
    CHECK(r.head.framing == AnswerHead::Framing::kUntilClose);
    CHECK(r.head.server_closes);
    CHECK(r.body == "something broke");
  }
  SECTION("204 has no body even with a length") {
    const Read r = read_scripted("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", 100);
    CHECK(r.body_ok);
    CHECK(r.head.framing == AnswerHead::Framing::kNone);
  }
  SECTION("Transfer-Encoding chunked wins over Content-Length") {
    const Read r = read_scripted("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", 3);
    CHECK(r.body == "ab");
  }
}

TEST_CASE("http answer: broken answers are errors that say what broke, never a hang or a wrong body") {
  const auto error_of = [](const std::string& bytes, uint64_t max_bytes = 1 << 20) {
    const Read r = read_scripted(bytes, 3, max_bytes);
    CHECK_FALSE((r.head_ok && r.body_ok));
    return r.error;
  };
  CHECK(error_of("") == "the API server closed the connection before answering");
  CHECK_THAT(error_of("SSH-2.0-OpenSSH\r\n\r\n"), Catch::Contains("not an HTTP/1.1 answer"));
  CHECK_THAT(error_of("HTTP/1.1 2x0 OK\r\n\r\n"), Catch::Contains("not an HTTP/1.1 answer"));
  CHECK_THAT(error_of("HTTP/1.1 200OK\r\n\r\n"), Catch::Contains("not an HTTP/1.1 answer"));
  CHECK_THAT(error_of("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"), Catch::Contains("malformed answer header"));
  CHECK_THAT(error_of("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"), Catch::Contains("Content-Length"));
  CHECK_THAT(error_of("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc"),
             Catch::Contains("Content-Length"));
  CHECK_THAT(error_of("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"), Catch::Contains("closed the connection"));
  CHECK_THAT(error_of("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", 99), Catch::Contains("larger than 99"));
  CHECK_THAT(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), Catch::Contains("chunk size"));
  CHECK_THAT(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n"),
             Catch::Contains("longer than its size"));
  CHECK_THAT(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", 5),
             Catch::Contains("larger than 5"));
  // A head that never ends is cut at the limit, not read forever.
  std::string endless = "HTTP/1.1 200 OK\r\n";
  while (endless.size() < AnswerReader::kMaxHeadBytes + 1000) endless += "X-Padding: 0123456789\r\n";
  CHECK_THAT(error_of(endless), Catch::Contains("longer than"));
  // A source that fails says so.
  ScriptedSource failing("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab", 100);
  failing.fail_at_end_ = true;
  AnswerReader reader(failing);
  CHECK(read_answer(reader).error == "reset");
}

TEST_CASE("http answer: a stream is handed over as it arrives, and the reader may stop it") {
  ScriptedSource source(kChunked, 1000);
  AnswerReader reader(source);
  const gpu_extender::Result<AnswerHead> head = reader.read_head();
  REQUIRE(head.ok());
  int calls = 0;
  const gpu_extender::Result<AnswerReader::BodyEnd> body =
      reader.read_body(*head, UINT64_MAX, [&](std::string_view) { return ++calls < 1; });
  CHECK(calls == 1);
  REQUIRE(body.ok());  // stopped, not failed
  CHECK(*body == AnswerReader::BodyEnd::kStopped);
}

TEST_CASE("http answer: the request head, with the target encoded where cpp-httplib encoded it") {
  const std::string head = request_head("POST", "/api/v1/namespaces/a b/pods?fieldSelector=x!=1,y=2\r\nEvil: 1",
                                        "10.0.0.1:6443", "tok", "application/json", 12, true);
  CHECK(head.rfind("POST /api/v1/namespaces/a%20b/pods?fieldSelector=x!=1%2Cy=2%0D%0AEvil:%201 HTTP/1.1\r\n", 0) == 0);
  CHECK_THAT(head, Catch::Contains("\r\nHost: 10.0.0.1:6443\r\n"));
  CHECK_THAT(head, Catch::Contains("\r\nAuthorization: Bearer tok\r\n"));
  CHECK_THAT(head, Catch::Contains("\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n"));
  CHECK(head.find("Connection") == std::string::npos);
  CHECK(head.size() - head.find("\r\n\r\n") == 4);  // the head ends there: the body follows it
  const std::string watch = request_head("GET", "/api/v1/pods?watch=1", "h:1", "", "", 0, false);
  CHECK_THAT(watch, Catch::Contains("\r\nConnection: close\r\n"));
  CHECK(watch.find("Authorization") == std::string::npos);
  CHECK(watch.find("Content-Length") == std::string::npos);
}
