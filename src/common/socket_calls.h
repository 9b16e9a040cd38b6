#pragma once
// The few socket calls both HTTP layers make (the verb port's connections, the API client's).
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <array>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>

namespace gpu_extender {

// poll() on one socket, retried on EINTR: > 0 when `events` are ready, 0 on timeout, -1 on an error
// (POLLERR or POLLNVAL without the events asked for counts as an error: a read or write would fail).
inline int wait_for_socket(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r = 0;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r > 0 && (p.revents & (POLLERR | POLLNVAL)) != 0 && (p.revents & events) == 0) return -1;
  return r;
}

// A blocking socket's wait for each read (SO_RCVTIMEO) or send (SO_SNDTIMEO): the call itself is
// then the bounded wait, with no poll() before it.
inline void set_socket_timeout(int fd, int option, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

// The numeric host and port of one end of a socket: `name_of` is ::getpeername or ::getsockname.
// {"", 0} when the socket has no such address.
inline std::pair<std::string, int> socket_address(int fd, int (*name_of)(int, sockaddr*, socklen_t*)) {
  sockaddr_storage addr{};
  socklen_t length = sizeof addr;
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> service{};
  if (name_of(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0 ||
      getnameinfo(reinterpret_cast<sockaddr*>(&addr), length, host.data(), host.size(), service.data(),
                  service.size(), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return {};
  return {host.data(), std::atoi(service.data())};
}

}  // namespace gpu_extender
