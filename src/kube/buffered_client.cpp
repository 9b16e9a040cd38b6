#include "buffered_client.h"

#include "common/socket_calls.h"

#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <tuple>

namespace gpu_extender::kube {
namespace {

// One request and its answer on a connection (see the header). Timeouts are cpp-httplib's own: it
// makes the client's sockets blocking with SO_RCVTIMEO and SO_SNDTIMEO set to the client's read and
// write timeouts, so a read or a send is itself the bounded wait: no poll() before each one. OpenSSL
// reads ahead (set on the client's context: a record's header and body, and what follows, in one
// read() instead of two).
class BufferedStream final : public httplib::Stream {
 public:
  BufferedStream(int fd, SSL* ssl, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd), ssl_(ssl), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

  bool is_readable() const override {
    return begin_ < end_ || tls_has_pending() || wait_for(POLLIN, read_timeout_ms_) > 0;
  }
  bool is_writable() const override { return wait_for(POLLOUT, write_timeout_ms_) > 0; }

  // The answer is read only after the whole request is written: what write() held goes out first.
  ssize_t read(char* out, size_t size) override {
    if (!flush()) return -1;
    if (begin_ == end_) {
      const ssize_t n = refill();
      if (n <= 0) return n;
    }
    const size_t taken = std::min(size, end_ - begin_);
    std::memcpy(out, buffer_.data() + begin_, taken);
    begin_ += taken;
    return static_cast<ssize_t>(taken);
  }

  ssize_t write(const char* data, size_t size) override {
    if (unsent_.size() + size <= kHoldBytes) {
      unsent_.append(data, size);
      return static_cast<ssize_t>(size);
    }
    if (!flush()) return -1;
    return send_all(data, size) ? static_cast<ssize_t>(size) : -1;
  }

  // Sends what write() holds; false when the connection failed or timed out.
  bool flush() {
    if (unsent_.empty()) return true;
    const bool sent = send_all(unsent_.data(), unsent_.size());
    unsent_.clear();
    return sent;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    std::tie(ip, port) = socket_address(fd_, ::getpeername);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    std::tie(ip, port) = socket_address(fd_, ::getsockname);
  }
  socket_t socket() const override { return fd_; }

 private:
  // Bytes OpenSSL holds, decrypted or not yet (read ahead): a read may need no wait for them.
  bool tls_has_pending() const { return ssl_ != nullptr && SSL_has_pending(ssl_) == 1; }

  // Reads what the connection has (the read itself waits, up to the read timeout) into buffer_: the
  // bytes read, 0 when the server closed the connection, -1 on an error or a timeout.
  ssize_t refill() {
    begin_ = end_ = 0;
    if (ssl_ == nullptr) {
      ssize_t n = -1;
      do {
        n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      } while (n < 0 && errno == EINTR);
      if (n > 0) end_ = static_cast<size_t>(n);
      return n;
    }
    // A TLS read can end without data (a session ticket ahead of the data, a record in pieces):
    // read again, a bounded number of times, as cpp-httplib's own stream does.
    for (int attempt = 0; attempt < 1000; ++attempt) {
      errno = 0;
      const int n = SSL_read(ssl_, buffer_.data(), static_cast<int>(buffer_.size()));
      if (n > 0) {
        end_ = static_cast<size_t>(n);
        return n;
      }
      const int error = SSL_get_error(ssl_, n);
      if (error == SSL_ERROR_ZERO_RETURN) return 0;
      if (error != SSL_ERROR_WANT_READ) return -1;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;  // the read timeout passed
      if (errno != EINTR && !tls_has_pending() && wait_for(POLLIN, read_timeout_ms_) <= 0) return -1;
    }
    return -1;
  }

  bool send_all(const char* data, size_t size) {
    size_t sent = 0;
    while (sent < size) {
      const size_t chunk = std::min<size_t>(size - sent, size_t{1} << 30);
      ssize_t n = -1;
      if (ssl_ != nullptr) {
        n = SSL_write(ssl_, data + sent, static_cast<int>(chunk));  // waits at most the write timeout
      } else {
        do {
          n = ::send(fd_, data + sent, chunk, MSG_NOSIGNAL);
        } while (n < 0 && errno == EINTR);
      }
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  int wait_for(short events, int timeout_ms) const { return wait_for_socket(fd_, events, timeout_ms); }

  // A request bigger than this (a large patch) goes out as it is written, after what is held.
  static constexpr size_t kHoldBytes = size_t{64} * 1024;

  const int fd_;
  SSL* const ssl_;
  const int read_timeout_ms_, write_timeout_ms_;
  std::string unsent_;
  std::array<char, size_t{16} * 1024> buffer_;  // one TLS record's worth; not zeroed (a stream is made per call)
  size_t begin_ = 0, end_ = 0;
};

int to_ms(time_t seconds, time_t microseconds) {
  return static_cast<int>(std::min<time_t>(seconds * 1000 + microseconds / 1000, time_t{24} * 3600 * 1000));
}

// cpp-httplib runs each request through process_socket with a stream of its own making; these give
// it a BufferedStream instead (the overridden function is private in cpp-httplib: overriding a
// private virtual is allowed, calling it is not, so the stream is made here from the socket).
bool process_buffered(int fd, SSL* ssl, const std::function<bool(httplib::Stream&)>& callback, int read_timeout_ms,
                      int write_timeout_ms) {
  BufferedStream stream(fd, ssl, read_timeout_ms, write_timeout_ms);
  const bool ok = callback(stream);
  return stream.flush() && ok;
}

class BufferedPlainClient final : public httplib::ClientImpl {
 public:
  using ClientImpl::ClientImpl;

 private:
  bool process_socket(const Socket& socket, std::function<bool(httplib::Stream&)> callback) override {
    return process_buffered(socket.sock, nullptr, callback, to_ms(read_timeout_sec_, read_timeout_usec_),
                            to_ms(write_timeout_sec_, write_timeout_usec_));
  }
};

class BufferedTlsClient final : public httplib::SSLClient {
 public:
  using SSLClient::SSLClient;

 private:
  bool process_socket(const Socket& socket, std::function<bool(httplib::Stream&)> callback) override {
    return process_buffered(socket.sock, socket.ssl, callback, to_ms(read_timeout_sec_, read_timeout_usec_),
                            to_ms(write_timeout_sec_, write_timeout_usec_));
  }
};

}  // namespace

std::unique_ptr<httplib::ClientImpl> make_buffered_client(const std::string& host, int port) {
  return std::make_unique<BufferedPlainClient>(host, port);
}

std::unique_ptr<httplib::SSLClient> make_buffered_tls_client(const std::string& host, int port, X509* client_cert,
                                                             EVP_PKEY* client_key) {
  std::unique_ptr<httplib::SSLClient> client =
      client_cert != nullptr && client_key != nullptr
          ? std::make_unique<BufferedTlsClient>(host, port, client_cert, client_key)
          : std::make_unique<BufferedTlsClient>(host, port);
  SSL_CTX_set_read_ahead(client->ssl_context(), 1);  // every connection's SSL inherits it
  return client;
}

}  // namespace gpu_extender::kube
