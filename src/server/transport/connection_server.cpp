#include "server/transport/connection_server.h"

#include "common/socket_calls.h"
#include "server/transport/connection_stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace gpu_extender {
namespace {

using Clock = std::chrono::steady_clock;

// The connection this thread serves. A thread-local, not a parameter: cpp-httplib calls the routing
// handlers with the request and the response only, and they must reach the connection (to close it
// after an answer, to learn why a read stopped).
thread_local ConnectionStream* current_stream = nullptr;

// A simple request read from the connection's buffer. Its head is taken from the buffer when the body
// is read or the answer written; a route that declines it has taken nothing.
class StreamExchange final : public SimpleExchange {
 public:
  StreamExchange(ConnectionStream& stream, const SimpleHead& head, bool last, std::string_view keep_alive_line)
      : stream_(stream), head_(head), ends_connection_(last || head.client_closes), keep_alive_line_(keep_alive_line) {}

  const SimpleHead& head() const override { return head_; }

  bool read_body(const std::function<bool(const char*, size_t)>& receiver) override {
    take_head();
    while (body_left_ > 0) {
      if (stream_.buffered_bytes().empty() && !stream_.receive_more(body_left_)) return false;
      const std::string_view piece = stream_.buffered_bytes().substr(0, body_left_);
      stream_.consume(piece.size());
      body_left_ -= piece.size();
      if (!receiver(piece.data(), piece.size())) return false;
    }
    return true;
  }

  void close_after_answer() override { close_ = true; }

  void answer(int status, std::string_view content_type, std::string_view more_headers,
              std::string_view body) override {
    take_head();
    close_ = close_ || ends_connection_;
    std::string head;
    head.reserve(128 + more_headers.size());
    head.append("HTTP/1.1 ").append(std::to_string(status)).append(" ").append(status_reason(status)).append("\r\n");
    if (close_) head.append("Connection: close\r\n");
    head.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
    if (!body.empty()) head.append("Content-Type: ").append(content_type).append("\r\n");
    // As cpp-httplib: Keep-Alive unless this request ends the connection by itself, even when the
    // answer closes it for another reason (then both headers go out).
    if (!ends_connection_) head.append(keep_alive_line_);
    head.append(more_headers).append("\r\n");
    answered_ = write_all(head) && write_all(body);
  }

  bool answered() const { return answered_; }
  // The connection cannot go on: asked to close, or the body was not read to its end.
  bool must_close() const { return close_ || !head_taken_ || body_left_ > 0; }

 private:
  // The stream takes a large write in parts (what the socket accepts at once).
  bool write_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = stream_.write(bytes.data(), bytes.size());
      if (n < 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  void take_head() {
    if (head_taken_) return;
    head_taken_ = true;
    stream_.consume(head_.head_bytes);
    stream_.headers_complete();
    body_left_ = head_.content_length;
  }

  ConnectionStream& stream_;
  const SimpleHead head_;
  const bool ends_connection_;  // the last request of the connection, or the client said close
  const std::string_view keep_alive_line_;
  bool head_taken_ = false, close_ = false, answered_ = false;
  size_t body_left_ = 0;
};

// The TLS handshake, with the header deadline: a client trickling its handshake is cut off too, and
// under pressure (ConnectionLimits::under_pressure) after the pressed deadline.
bool accept_tls(int fd, SSL* ssl, const ConnectionLimits& limits, Clock::time_point arrived) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  const auto began = arrived;
  const auto until = Clock::now() + limits.header_deadline;
  bool ok = false;
  while (true) {
    const int r = SSL_accept(ssl);
    if (r == 1) {
      ok = true;
      break;
    }
    const int error = SSL_get_error(ssl, r);
    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) break;
    // Shedding: a handshake still waiting for the client's bytes is not waited for.
    const bool shed = limits.under_pressure && Clock::now() - began >= limits.pressed_deadline && limits.under_pressure();
    pollfd p{fd, static_cast<short>(error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
    const int ready = ::poll(&p, 1, shed ? 0 : static_cast<int>(std::min<int64_t>(left, ConnectionStream::kIdleWake.count())));
    if (ready < 0 || (shed && ready == 0)) break;
  }
  fcntl(fd, F_SETFL, flags);
  return ok;
}

}  // namespace

ConnectionServer::ConnectionServer(ConnectionLimits limits, SslContextHandle tls)
    : limits_(limits), tls_(std::move(tls)) {
  set_keep_alive_timeout(limits_.keep_alive.count());  // for the Keep-Alive header cpp-httplib writes
  set_keep_alive_max_count(limits_.max_requests_per_connection);
  // As cpp-httplib writes it from the two settings above, for the answers written without it.
  keep_alive_line_ = "Keep-Alive: timeout=" + std::to_string(limits_.keep_alive.count()) +
                     ", max=" + std::to_string(limits_.max_requests_per_connection) + "\r\n";
}

ConnectionServer::~ConnectionServer() = default;

void ConnectionServer::headers_complete() {
  if (current_stream != nullptr) current_stream->headers_complete();
}

void ConnectionServer::close_after_answer(httplib::Response& res) {
  res.set_header("Connection", "close");
  if (current_stream != nullptr) current_stream->request_close();
}

RequestProblem ConnectionServer::current_problem() {
  return current_stream != nullptr ? current_stream->problem() : RequestProblem::kNone;
}

void ConnectionServer::answer_problem(httplib::Stream& stream, RequestProblem problem) const {
  if (!problem_answer_) return;
  const auto [status, body] = problem_answer_(problem);
  const std::string head = "HTTP/1.1 " + std::to_string(status) + " " + status_reason(status) +
                           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                           (status == 503 ? "\r\nRetry-After: 1" : "") + "\r\nConnection: close\r\n\r\n";
  stream.write(head + body);
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  // A blocking read or write inside OpenSSL (the rest of a record) is bounded by these. On plain
  // HTTP every read blocks, for at most the receive timeout (kIdleWake), and is repeated: that is how
  // often a wait looks at the idle limit, a stop, the read timeout and the request's deadlines (a
  // deadline is kept to within kIdleWake).
  set_socket_timeout(sock, SO_RCVTIMEO, tls_ ? std::chrono::milliseconds(limits_.read_timeout) : ConnectionStream::kIdleWake);
  set_socket_timeout(sock, SO_SNDTIMEO, limits_.write_timeout);

  const Clock::time_point arrived = limits_.arrived_at ? std::min(limits_.arrived_at(), Clock::now()) : Clock::now();
  SslHandle owned_ssl(tls_ ? SSL_new(tls_.get()) : nullptr);
  SSL* ssl = owned_ssl.get();
  bool ok = true;
  if (tls_) ok = ssl != nullptr && SSL_set_fd(ssl, sock) == 1 && accept_tls(sock, ssl, limits_, arrived);
  bool graceful = false;
  if (ok) {
    ConnectionStream stream(sock, ssl, limits_, arrived);
    current_stream = &stream;
    const auto stopping = [this] { return svr_sock_ == INVALID_SOCKET; };
    size_t left = limits_.max_requests_per_connection;
    while (left > 0 && stream.await_request(stopping)) {
      bool closed = false;
      const bool last = left == 1 || stopping();
      if (simple_route_ && ssl == nullptr) {
        if (const auto head = parse_simple_head(stream.buffered_bytes(), limits_.max_header_bytes, simple_paths_)) {
          StreamExchange exchange(stream, *head, last, keep_alive_line_);
          if (simple_route_(exchange)) {
            graceful = exchange.answered() && stream.flush();
            if (!graceful || exchange.must_close() || stream.problem() != RequestProblem::kNone) break;
            --left;
            continue;
          }
        }
      }
      graceful = process_request(stream, last, closed, [ssl](httplib::Request& req) { req.ssl = ssl; });
      if (!graceful && stream.problem() != RequestProblem::kNone && !stream.answered())
        answer_problem(stream, stream.problem());  // cut off in the request line: cpp-httplib said nothing
      if (!stream.flush()) graceful = false;
      // After a cut-off request the rest of the stream cannot be framed: close.
      if (!graceful || closed || stream.problem() != RequestProblem::kNone || stream.close_requested()) break;
      --left;
    }
    current_stream = nullptr;
  }
  if (ssl != nullptr && graceful) SSL_shutdown(ssl);  // owned_ssl frees it
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return graceful;
}

}  // namespace gpu_extender
