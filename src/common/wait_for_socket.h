#pragma once
// poll() on one socket, retried on EINTR: > 0 when `events` are ready, 0 on timeout, -1 on an error
// (POLLERR or POLLNVAL without the events asked for counts as an error: a read or write would fail).
#include <poll.h>

#include <cerrno>

namespace gpu_extender {

inline int wait_for_socket(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r = 0;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r > 0 && (p.revents & (POLLERR | POLLNVAL)) != 0 && (p.revents & events) == 0) return -1;
  return r;
}

}  // namespace gpu_extender
