#pragma once
// A minimal HTTP/1.1 keep-alive client over a plain socket: the request written as Go's net/http client
// writes it, the answer read with large reads into a reused buffer, as it reads (kube-scheduler's
// extender calls). Go 1.19's transport (kube-scheduler 1.26's) buffers the headers and the body's start
// in a 4 KB bufio.Writer, flushes it, then copies the rest of the body in writes of 32 KB (io.Copy's
// buffer): a 7 KB names-mode request arrives as 4,096 + 2,954 bytes (strace on the real scheduler), a
// 55 KB one as 4,096 + 32,768 + the rest (strace on a Go 1.19 client). So does this one's. Benchmarks and the scheduler driver use it so that their figures measure the
// server, not the client: cpp-httplib's client polls before every 4 KB read, which doubles the round
// trip of a 200 KB answer on loopback. Not a general HTTP client (no chunked encoding, no TLS).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <string_view>

namespace test_support {

class RawHttpClient {
 public:
  RawHttpClient(const std::string& host, int port, const std::string& path, const std::string& body,
                const std::string& extra_headers = "")
      : host_(host), port_(port) {
    set_post(path, body, extra_headers);
    buffer_.resize(1 << 20);
  }
  ~RawHttpClient() { close_socket(); }

  // Sends the request and reads the whole answer. Returns the status, or -1 on a transport error.
  int post() {
    if (fd_ < 0 && !connect_socket()) return -1;
    if (!send_all()) {
      close_socket();
      if (!connect_socket() || !send_all()) return -1;  // the server may have closed an idle connection
    }
    return read_answer();
  }
  size_t answer_bytes() const { return answer_bytes_; }
  // Whether a connection is open (the next request goes on it), and closing it.
  bool connected() const { return fd_ >= 0; }
  void disconnect() { close_socket(); }
  // The last answer's body, as read (valid until the next request).
  std::string_view answer() const { return std::string_view(buffer_.data() + body_offset_, answer_bytes_); }
  // The same, keeping the answer's body.
  int post_and_read(std::string& answer) {
    const int status = post();
    if (status > 0) answer.assign(buffer_.data() + body_offset_, answer_bytes_);
    return status;
  }
  // Any POST on the same connection: its status (-1 on a transport error, a timeout included) and
  // the answer's body.
  int post(const std::string& path, const std::string& body, std::string& answer) {
    set_post(path, body, "");
    return post_and_read(answer);
  }
  // Reads give up after this long without a byte (kube-scheduler's extender httpTimeout is 5 s).
  void set_read_timeout(std::chrono::milliseconds timeout) { read_timeout_ = timeout; }
  // A GET on the same connection (for /healthz probes).
  int get_and_read(const std::string& path, std::string& answer) {
    request_ = "GET " + path + " HTTP/1.1\r\nHost: " + host_ + "\r\n\r\n";
    return post_and_read(answer);
  }

 private:
  void set_post(const std::string& path, const std::string& body, const std::string& extra_headers) {
    request_ = "POST " + path + " HTTP/1.1\r\nHost: " + host_ + ":" + std::to_string(port_) +
               "\r\nUser-Agent: gpu-extender-test\r\nContent-Type: application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n";
    request_ += body;
  }
  bool connect_socket() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return false;
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (read_timeout_.count() > 0) {
      const timeval tv{static_cast<time_t>(read_timeout_.count() / 1000),
                       static_cast<suseconds_t>(read_timeout_.count() % 1000 * 1000)};
      setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    inet_pton(AF_INET, host_.c_str(), &addr.sin_addr);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close_socket();
      return false;
    }
    return true;
  }
  void close_socket() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  bool send_all() {
    constexpr size_t kFirstWrite = 4096, kLaterWrites = 32768;  // Go's bufio.Writer, then io.Copy
    size_t sent = 0;
    while (sent < request_.size()) {
      const size_t piece = std::min(request_.size() - sent, sent < kFirstWrite ? kFirstWrite - sent : kLaterWrites);
      const ssize_t n = send(fd_, request_.data() + sent, piece, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  int read_answer() {
    size_t have = 0, header_end = std::string::npos;
    while (header_end == std::string::npos) {
      if (have == buffer_.size()) buffer_.resize(buffer_.size() * 2);
      const ssize_t n = recv(fd_, buffer_.data() + have, buffer_.size() - have, 0);
      if (n <= 0) return fail();
      have += static_cast<size_t>(n);
      const std::string_view seen(buffer_.data(), have);
      header_end = seen.find("\r\n\r\n");
    }
    const std::string_view head(buffer_.data(), header_end);
    const int status = std::atoi(head.substr(9, 3).data());
    size_t length = 0;
    const size_t at = head.find("Content-Length: ");
    if (at != std::string_view::npos) length = std::strtoull(head.data() + at + 16, nullptr, 10);
    // Read from the head before the buffer grows: the view would point into the memory it leaves.
    const bool server_closes = head.find("Connection: close") != std::string_view::npos;
    const size_t total = header_end + 4 + length;
    if (buffer_.size() < total) buffer_.resize(total);
    while (have < total) {
      const ssize_t n = recv(fd_, buffer_.data() + have, total - have, 0);
      if (n <= 0) return fail();
      have += static_cast<size_t>(n);
    }
    answer_bytes_ = length;
    body_offset_ = header_end + 4;
    // The server asked to close (it does when others wait for a worker): reconnect for the next one.
    if (server_closes) close_socket();
    return status;
  }
  int fail() {
    close_socket();
    return -1;
  }

  std::string host_;
  int port_;
  std::string request_;
  std::string buffer_;
  int fd_ = -1;
  std::chrono::milliseconds read_timeout_{0};  // 0: none
  size_t answer_bytes_ = 0;
  size_t body_offset_ = 0;
};

}  // namespace test_support
