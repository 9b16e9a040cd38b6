#pragma once
// A raw client connection to the extender, for requests no HTTP library would send: pipelined,
// trickled, half-sent, oversized.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

namespace test_support {

// A TCP connection to 127.0.0.1:port whose reads give up after 15 s of silence: its descriptor.
inline int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  timeval timeout{15, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

// A raw client connection, for requests no HTTP library would send.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(connect_loopback(port)) {}
  ~RawConnection() { close(fd_); }
  bool send_all(const std::string& data) {
    for (size_t sent = 0; sent < data.size();) {
      const ssize_t n = send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Sends one byte of `data` every `every` until the server answers (or closes) or `data` runs out.
  // True when the server spoke (or closed) before the end of `data`.
  bool trickle(const std::string& data, std::chrono::milliseconds every) {
    for (char byte : data) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(every.count())) != 0) return true;  // an answer, or the end
      if (!send_all(std::string(1, byte))) return true;
    }
    return false;
  }
  // What one recv gives (empty when the server closed, or sent nothing within the receive timeout).
  std::string read_some() {
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }
  // Everything the server sends until it closes the connection.
  std::string read_until_close() {
    std::string answer;
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd_, buf, sizeof buf, 0)) > 0) answer.append(buf, static_cast<size_t>(n));
    return answer;
  }

 private:
  int fd_ = -1;
};

}  // namespace test_support
