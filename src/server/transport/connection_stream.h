#pragma once
// One connection's stream, alive across all of its requests (connection_server.h says why): its read
// buffer, the deadlines of the request being read and of the answer being written, plain or TLS.
// Used by ConnectionServer only; one thread at a time.
#include <httplib.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/socket_calls.h"
#include "server/transport/connection_server.h"

namespace gpu_extender {

class ConnectionStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;
  // How often a connection waiting for its next request looks whether the server stops or the
  // keep-alive time has passed.
  static constexpr std::chrono::milliseconds kIdleWake{250};

  // `arrived`: when the connection was accepted (it may have waited for a thread since).
  ConnectionStream(int fd, SSL* ssl, const ConnectionLimits& limits, Clock::time_point arrived)
      : fd_(fd), ssl_(ssl), limits_(limits), arrived_(arrived) {}

  // Waits up to the keep-alive time (or until `stopping`) for a request's first byte, then starts
  // its clocks. False: nothing came, or the client closed.
  template <class Stopping>
  bool await_request(Stopping stopping) {
    in_request_ = false;
    const bool first = requests_ == 0;
    const auto idle_since = first ? arrived_ : Clock::now();
    const auto idle_until = idle_since + limits_.keep_alive;
    while (!has_buffered()) {
      if (stopping()) return false;
      const bool shed = shed_since(idle_since);  // then only what is there already is taken: no wait
      const auto left = idle_until - Clock::now();
      if (left <= Clock::duration::zero()) return false;
      // Wake now and then to notice a server stop; an idle connection costs a few wake-ups a second.
      if (ssl_ == nullptr) {
        // The read is the wait: SO_RCVTIMEO (kIdleWake) ends it; no poll() before each request.
        const ssize_t n = receive(shed ? MSG_DONTWAIT : 0);
        if (shed && n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return false;
        continue;
      }
      const int wait_ms = shed ? 0 : static_cast<int>(std::min<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1, kIdleWake.count()));
      const int ready = poll_fd(POLLIN, wait_ms);
      if (ready < 0 || (shed && ready == 0)) return false;
      if (ready > 0) {
        if (fill() <= 0) return false;
      }
    }
    const auto now = Clock::now();
    problem_ = RequestProblem::kNone;
    in_request_ = true;
    in_headers_ = true;
    header_bytes_ = 0;
    request_began_ = first ? std::min(arrived_, now) : now;
    ++requests_;
    header_until_ = now + limits_.header_deadline;
    request_until_ = now + limits_.request_deadline;
    answer_until_.reset();
    return true;
  }

  void headers_complete() { in_headers_ = false; }
  void request_close() { close_requested_ = true; }
  bool close_requested() const { return close_requested_; }
  bool answered() const { return answer_until_.has_value(); }  // a byte of the answer was written
  RequestProblem problem() const { return problem_; }

  bool is_readable() const override { return has_buffered() || poll_fd(POLLIN, 0) > 0; }

  bool is_writable() const override {
    return poll_fd(POLLOUT, wait_ms(limits_.write_timeout, answer_until_.value_or(Clock::now() + limits_.answer_deadline))) > 0;
  }

  ssize_t read(char* out, size_t size) override {
    if (in_headers_ && header_bytes_ + size > limits_.max_header_bytes) {
      // cpp-httplib reads headers a byte at a time: this triggers on the first byte past the limit.
      problem_ = RequestProblem::kHeadersTooLarge;
      return -1;
    }
    if (!has_buffered() && fill() <= 0) return -1;
    size_t n = 0;
    if (ssl_ != nullptr) {
      const ssize_t taken = tls_take(out, size);
      if (taken < 0) return -1;
      n = static_cast<size_t>(taken);
    } else {
      n = std::min(size, buffered_end_ - buffered_begin_);
      std::memcpy(out, buffer_.data() + buffered_begin_, n);
      buffered_begin_ += n;
    }
    if (in_headers_) header_bytes_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* data, size_t size) override {
    if (!answer_until_) answer_until_ = Clock::now() + limits_.answer_deadline;
    if (ssl_ != nullptr) {
      if (poll_fd(POLLOUT, wait_ms(limits_.write_timeout, *answer_until_)) <= 0) {
        if (Clock::now() >= *answer_until_) problem_ = RequestProblem::kTimedOut;
        return -1;
      }
      const int chunk = static_cast<int>(std::min<size_t>(size, 1 << 30));
      const int n = SSL_write(ssl_, data, chunk);
      return n > 0 ? n : -1;
    }
    // cpp-httplib writes an answer's headers and body apart: small answers leave in one send (flush()
    // after each request), larger ones after what is held.
    if (unsent_.size() + size <= kCoalesceBytes) {
      unsent_.append(data, size);
      return static_cast<ssize_t>(size);
    }
    if (!unsent_.empty()) return send_held_then(data, size);
    return send_some(data, size);
  }

  // Sends what write() holds; false when the client stopped taking it in time.
  bool flush() {
    size_t sent = 0;
    while (sent < unsent_.size()) {
      const ssize_t n = send_some(unsent_.data() + sent, unsent_.size() - sent);
      if (n < 0) return false;
      sent += static_cast<size_t>(n);
    }
    unsent_.clear();
    return true;
  }

  // Asked by cpp-httplib for every request: looked up once a connection.
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    if (!remote_) remote_ = socket_address(fd_, ::getpeername);
    std::tie(ip, port) = *remote_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    if (!local_) local_ = socket_address(fd_, ::getsockname);
    std::tie(ip, port) = *local_;
  }
  socket_t socket() const override { return fd_; }

  // Plain HTTP: the bytes read and not taken yet; consume() takes them, receive_more() reads more
  // (within the request's deadlines; false when none came).
  std::string_view buffered_bytes() const {
    return {buffer_.data() + buffered_begin_, buffered_end_ - buffered_begin_};
  }
  void consume(size_t n) { buffered_begin_ += n; }
  // Reads more of a body of which `wanted` bytes are still to come (false when none came in time).
  bool receive_more(size_t wanted) {
    if (ssl_ == nullptr && wanted > kGatherBytes && gather(std::min(wanted, kGatherMaxBytes))) return true;
    return fill() > 0;
  }

 private:
  // Plain HTTP reads into buffer_ (kept across requests: a pipelined request's bytes are not lost).
  // TLS keeps its read-ahead in OpenSSL instead (tls_peeked_: a record is waiting there).
  bool has_buffered() const {
    return ssl_ != nullptr ? SSL_pending(ssl_) > 0 || tls_peeked_ : buffered_begin_ < buffered_end_;
  }

  // Waits (bounded by the read timeout and the request's deadlines) and reads what is there.
  ssize_t fill() {
    // Never wait for the client while holding bytes written for it: cpp-httplib answers `Expect:
    // 100-continue` with a write, then reads the body, and a held "100 Continue" kept curl waiting
    // a second for it before it sent a body over 1 MB.
    if (!unsent_.empty() && !flush()) return -1;
    if (in_request_) {
      const auto until = in_headers_ ? std::min(header_until_, request_until_) : request_until_;
      if (Clock::now() >= until) {  // however steadily the bytes come
        problem_ = RequestProblem::kTimedOut;
        return -1;
      }
      if (ssl_ == nullptr) {
        // The read is the wait: the socket's SO_RCVTIMEO (kIdleWake) ends it, and it is read again
        // until a byte comes, the read timeout passes, or a deadline does. No poll() before it (most
        // of a request is there already; the rest of a body Go writes in pieces comes within
        // microseconds).
        const auto read_until = std::min(until, Clock::now() + limits_.read_timeout);
        for (;;) {
          // Shedding: what is there already is read, nothing is waited for.
          const bool shed = in_headers_ && shed_since(request_began_);
          const ssize_t n = receive(shed ? MSG_DONTWAIT : 0);
          if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return n;
          if (!may_wait_more(read_until, until)) return -1;
        }
      }
      // TLS: poll, in slices of kIdleWake while the headers come (so that shedding is seen in time).
      const auto read_until = std::min(until, Clock::now() + limits_.read_timeout);
      for (;;) {
        const bool shed = in_headers_ && shed_since(request_began_);
        const int slice = shed ? 0 : in_headers_ ? static_cast<int>(kIdleWake.count()) : wait_ms(limits_.read_timeout, until);
        const int ready = poll_fd(POLLIN, std::min(slice, wait_ms(limits_.read_timeout, read_until)));
        if (ready > 0) break;
        if (ready < 0 || !may_wait_more(read_until, until)) return -1;
      }
    }
    if (ssl_ != nullptr) {
      // Make OpenSSL read a record; the bytes stay in it until read() takes them.
      char probe = 0;
      const int n = SSL_peek(ssl_, &probe, 1);
      tls_peeked_ = n > 0;
      return n > 0 ? n : -1;
    }
    return receive(0);
  }

  // Plain HTTP, a body whose rest is more than one write of its client: kube-scheduler's Go transport
  // writes a request as 4 KB, then pieces of 32 KB, and a thread blocked in recv() is woken (a context
  // switch out and back in) for every piece. Here the socket's SO_RCVLOWAT is raised to `bytes` for a
  // poll(), so that the kernel wakes this thread once, when they are all there: the rest of a ~80 KB
  // names-mode /filter of 5,000 nodes costs two wake-ups instead of three. Only poll() is used with
  // the raised mark (a recv() that has copied some bytes would wait for `bytes` more), and the mark is
  // 1 again before any read. The wait is short (kGatherWait): a slower client is read as before, piece
  // by piece. True when it read; false: nothing there yet, read the usual way.
  bool gather(size_t bytes) {
    if (receive(MSG_DONTWAIT) > 0) return true;  // already there: no wait, no mark
    if (Clock::now() >= request_until_) return false;
    if (!set_low_water(bytes)) return false;
    const int ready = poll_fd(POLLIN, static_cast<int>(kGatherWait.count()));
    set_low_water(1);
    return ready > 0 && receive(MSG_DONTWAIT) > 0;
  }

  bool set_low_water(size_t bytes) {
    const int value = static_cast<int>(bytes);
    return setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &value, sizeof value) == 0;
  }

  // One recv into buffer_ (plain HTTP), which then holds what it read.
  ssize_t receive(int flags) {
    buffered_begin_ = 0;
    ssize_t n = -1;
    do {
      n = ::recv(fd_, buffer_.data(), buffer_.size(), flags);
    } while (n < 0 && errno == EINTR);
    buffered_end_ = n > 0 ? static_cast<size_t>(n) : 0;
    return n;
  }

  ssize_t tls_take(char* out, size_t size) {
    const int n = SSL_read(ssl_, out, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    tls_peeked_ = false;
    return n > 0 ? n : -1;
  }

  int poll_fd(short events, int timeout_ms) const { return wait_for_socket(fd_, events, timeout_ms); }

  // The shorter of the per-read timeout and what is left before `until`, in ms (0 once past it).
  static int wait_ms(std::chrono::seconds timeout, Clock::time_point until) {
    // Rounded up: a wait that ends at the deadline ends past it, and is seen as a timeout.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
    const auto wait = std::min<std::chrono::milliseconds>(timeout, left);
    return static_cast<int>(std::max<int64_t>(wait.count(), 0));
  }

  // After a wait for the request's bytes that brought none: false (with the problem noted) once the
  // read timeout, the request's deadline or slow-client shedding ends the wait.
  bool may_wait_more(Clock::time_point read_until, Clock::time_point until) {
    const auto now = Clock::now();
    if (now >= until) {
      problem_ = RequestProblem::kTimedOut;
      return false;
    }
    if (in_headers_ && shed_since(request_began_)) {
      problem_ = RequestProblem::kShed;
      return false;
    }
    return now < read_until;
  }

 public:
  // Whether slow-client shedding cuts a connection waiting (idle, or for its headers) since `since`.
  bool shed_since(Clock::time_point since) const {
    return limits_.under_pressure && Clock::now() - since >= limits_.pressed_deadline && limits_.under_pressure();
  }

 private:
  // Plain HTTP: sends what the socket takes now, waiting (within the answer's deadline) only when it
  // takes nothing; the bytes sent, or -1.
  ssize_t send_some(const char* data, size_t size) {
    while (true) {
      const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (!may_retry_send()) return -1;
    }
  }

  // What write() holds (a large answer's headers), then `data` (its body), in one sendmsg: they leave
  // together without the body being copied. The bytes of `data` sent, or -1.
  ssize_t send_held_then(const char* data, size_t size) {
    size_t held_sent = 0;
    while (true) {
      std::array<iovec, 2> parts{iovec{unsent_.data() + held_sent, unsent_.size() - held_sent},
                                 iovec{const_cast<char*>(data), size}};
      msghdr message{};
      message.msg_iov = parts.data();
      message.msg_iovlen = parts.size();
      const ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (!may_retry_send()) return -1;
        continue;
      }
      const size_t held_left = unsent_.size() - held_sent;
      if (static_cast<size_t>(n) < held_left) {
        held_sent += static_cast<size_t>(n);
        continue;
      }
      unsent_.clear();
      const size_t body_sent = static_cast<size_t>(n) - held_left;
      return body_sent > 0 ? static_cast<ssize_t>(body_sent) : send_some(data, size);
    }
  }

  // After a send that failed: true when it may be tried again (interrupted, or the socket took
  // nothing and became writable within the answer's deadline).
  bool may_retry_send() {
    if (errno == EINTR) return true;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    if (poll_fd(POLLOUT, wait_ms(limits_.write_timeout, *answer_until_)) <= 0) {
      if (Clock::now() >= *answer_until_) problem_ = RequestProblem::kTimedOut;
      return false;
    }
    return true;
  }

  const int fd_;
  SSL* const ssl_;
  const ConnectionLimits& limits_;
  const Clock::time_point arrived_;
  size_t requests_ = 0;  // requests begun on this connection
  std::array<char, size_t{64} * 1024> buffer_;  // not zeroed (64 KiB a connection): only bytes read are read back
  size_t buffered_begin_ = 0, buffered_end_ = 0;
  bool tls_peeked_ = false;
  bool in_request_ = false;  // between a request's first byte and its answer; else idle
  bool in_headers_ = false;
  size_t header_bytes_ = 0;
  Clock::time_point request_began_{}, header_until_{}, request_until_{};
  std::optional<Clock::time_point> answer_until_;
  RequestProblem problem_ = RequestProblem::kNone;
  bool close_requested_ = false;
  static constexpr size_t kCoalesceBytes = size_t{64} * 1024;
  // A body rest past this is gathered (see gather()): Go's io.Copy writes 32 KB at a time, so a smaller
  // rest comes in one write, and waiting for it whole would only add system calls.
  static constexpr size_t kGatherBytes = size_t{32} * 1024;
  // At most this much is waited for at once: below half the default 128 KB receive buffer, so the
  // kernel never grows the buffer for the mark (and with it clamps the connection's receive window).
  static constexpr size_t kGatherMaxBytes = size_t{48} * 1024;
  static constexpr std::chrono::milliseconds kGatherWait{20};
  std::string unsent_;  // plain HTTP: the answer's bytes written and not sent yet
  using Address = std::pair<std::string, int>;
  mutable std::optional<Address> remote_, local_;  // looked up once a connection
};

}  // namespace gpu_extender
