#pragma once
// A cpp-httplib server that owns how each connection is read and written, so that its limits hold
// against any client. cpp-httplib 0.11 (Debian's, a compiled library: its limits cannot be changed
// by defines) serves a connection with a fresh stream per request, which
//   - drops the bytes of a pipelined next request that it had read ahead: the client waits forever;
//   - reads any number of header lines (27 MB of headers: 330 MB resident);
//   - bounds only the silence between two reads, so a client sending a byte every few seconds holds
//     a connection and its thread for as long as it likes (slowloris).
// Here one stream lives as long as the connection: pipelined requests are answered in order; the
// header section is bounded in bytes (431 past it); a request's headers and its whole body each have
// a deadline from its first byte (408 past it); an answer has a deadline to be written; the idle
// wait between requests is the keep-alive time. TLS (with the same limits) is done here too: the
// handshake has the header deadline.
//
// Thread-safe as cpp-httplib's Server: each connection runs on one worker thread.
#include <httplib.h>

#include "common/openssl_handles.h"
#include <openssl/ssl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/transport/simple_request.h"

namespace gpu_extender {

struct ConnectionLimits {
  std::chrono::seconds keep_alive{30};       // idle wait for a connection's next request
  std::chrono::seconds read_timeout{10};     // silence allowed in the middle of a request
  std::chrono::seconds header_deadline{10};  // from a request's first byte to its last header (and the TLS handshake)
  std::chrono::seconds request_deadline{60};  // from a request's first byte to its last body byte
  std::chrono::seconds write_timeout{10};    // a client not reading for this long is cut off
  std::chrono::seconds answer_deadline{60};  // to write a whole answer
  size_t max_header_bytes = size_t{64} * 1024;       // request line and headers together
  size_t max_requests_per_connection = 10000;
  // Slow-client shedding. While `under_pressure` says so (connections wait for a worker: every thread
  // holds one), a connection that has not finished its request's headers `pressed_deadline` after their
  // first byte, or that has been idle that long between requests, is cut: real clients (kube-scheduler,
  // the API server, Prometheus) send a head in one write, so only the slow and the idle go, and the
  // queue moves long before the header deadline would move it. Checked every kIdleWake.
  std::function<bool()> under_pressure;
  std::chrono::milliseconds pressed_deadline{1000};
  // When the connection being served arrived (it may have waited in the queue before a thread took it):
  // its first request's clocks for shedding start then. Unset: when a thread takes it.
  std::function<std::chrono::steady_clock::time_point()> arrived_at;
};

// Why the current request on this thread's connection ended early (for the error answer).
// kShed: cut by slow-client shedding (ConnectionLimits::under_pressure).
enum class RequestProblem { kNone, kHeadersTooLarge, kTimedOut, kShed };

// A simple request (simple_request.h) on a plain-HTTP connection, given to a SimpleRoute, and its answer.
class SimpleExchange {
 public:
  virtual const SimpleHead& head() const = 0;
  // Hands the body to `receiver` as it arrives, in pieces (its false stops the reading); false when
  // the body did not come whole (the read problem is current_problem()).
  virtual bool read_body(const std::function<bool(const char*, size_t)>& receiver) = 0;
  // The connection closes once the answer is written (also says "Connection: close").
  virtual void close_after_answer() = 0;
  // Writes the answer as cpp-httplib would: the status line, then the headers in cpp-httplib's order
  // (by name: Connection, Content-Length, Content-Type, Keep-Alive), then `more_headers` (whole
  // "Name: value\r\n" lines whose names sort after those), the empty line and the body.
  virtual void answer(int status, std::string_view content_type, std::string_view more_headers,
                      std::string_view body) = 0;

 protected:
  ~SimpleExchange() = default;
};
// Serves a simple request; false when it does not take it (then cpp-httplib serves it: nothing of it
// was read).
using SimpleRoute = std::function<bool(SimpleExchange&)>;

class ConnectionServer : public httplib::Server {
 public:
  // `tls`: serve HTTPS with this context (taken over: freed with the server); null for plain HTTP.
  ConnectionServer(ConnectionLimits limits, SslContextHandle tls);
  ~ConnectionServer() override;

  // The status and body to answer a request cut off by `problem` (also used when cpp-httplib gave
  // up on the request line and would close without a word).
  using ProblemAnswer = std::function<std::pair<int, std::string>(RequestProblem)>;
  void set_problem_answer(ProblemAnswer answer) { problem_answer_ = std::move(answer); }

  // Called by the pre-routing handler, on the connection's thread: the headers are in, the body is next.
  static void headers_complete();
  // Called by a handler on the connection's thread: close the connection once this answer is written
  // (its body was not read, or the framing cannot be trusted). Also sets "Connection: close".
  static void close_after_answer(httplib::Response& res);
  static RequestProblem current_problem();

  // Simple requests (simple_request.h) for one of `paths`, on plain HTTP, go to `route` first.
  void set_simple_route(std::vector<std::string> paths, SimpleRoute route) {
    simple_paths_ = std::move(paths);
    simple_route_ = std::move(route);
  }

 private:
  bool process_and_close_socket(socket_t sock) override;

  void answer_problem(httplib::Stream& stream, RequestProblem problem) const;

  const ConnectionLimits limits_;
  SslContextHandle tls_;
  ProblemAnswer problem_answer_;
  std::vector<std::string> simple_paths_;
  SimpleRoute simple_route_;
  std::string keep_alive_line_;  // "Keep-Alive: ...\r\n" for simple requests' answers
};

}  // namespace gpu_extender
