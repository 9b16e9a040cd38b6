// The wire floor: the least CPU per placed pod that any extender can spend on a real kube-scheduler,
// whatever its stack, because it is what the node-cache wire itself asks of a process: each pod's
// /filter, /prioritize and /bind arrive as three HTTP requests (a wake-up, a read and a send each),
// and the bind is a TLS round trip to the API server. Nothing else is done: a worker thread a
// connection, in blocking recv/send (no poll, no parser library, one send an answer), /filter passes
// every node it is sent, /prioritize answers [] (every node 0), /bind writes the Binding on a TLS
// connection the worker keeps open and reads the answer. No watch, log, metrics, validation or deadlines: a
// measuring stick for bench/control_plane_cpu.sh (FLOOR=wire), never a server to run. Where
// floor_extender (cpp-httplib) prices the usual stack, this prices the message pattern alone: what a
// real-plane figure cannot go below on the machine that measured it.
//
// Usage: wire_floor_extender PORT API_HOST API_PORT TOKEN_FILE CA_FILE
#include "common/case_insensitive.h"
#include "common/http_fields.h"
#include "common/openssl_handles.h"
#include "floor_wire.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace {

using gpu_extender::SslContextHandle;
using gpu_extender::SslHandle;

struct ApiServer {
  std::string host;  // an IPv4 address: the loopback control plane
  int port = 0;
  std::string token;
  SslContextHandle tls;
};

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(sent));
  }
  return true;
}

// The value of a Content-Length field in `head` (the lines before the blank one), or npos, read with
// the field helpers the extender's own HTTP layers use.
size_t content_length(std::string_view head) {
  for (size_t at = head.find("\r\n"); at != std::string_view::npos;) {
    const size_t start = at + 2;
    at = head.find("\r\n", start);
    const std::string_view line = head.substr(start, at == std::string_view::npos ? at : at - start);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !gpu_extender::equals_ignore_case(line.substr(0, colon), "content-length"))
      continue;
    const auto length = gpu_extender::parse_content_length(gpu_extender::trim_blanks(line.substr(colon + 1)));
    return length ? static_cast<size_t>(*length) : std::string_view::npos;
  }
  return std::string_view::npos;
}

// One TLS connection to the API server, kept by the thread that opened it.
class ApiConnection {
 public:
  explicit ApiConnection(const ApiServer& api) : api_(api) {}
  ApiConnection(const ApiConnection&) = delete;
  ApiConnection& operator=(const ApiConnection&) = delete;
  ~ApiConnection() { close_connection(); }

  // POSTs `body` to `path`; the answer's status (0 when the exchange failed: the next one reconnects).
  int post(const std::string& path, const std::string& body) {
    if (!ssl_ && !connect_tls()) return 0;
    std::string request = "POST " + path + " HTTP/1.1\r\nHost: " + api_.host + "\r\nAuthorization: Bearer " +
                          api_.token + "\r\nContent-Type: application/json\r\nAccept: application/json\r\n" +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (SSL_write(ssl_.get(), request.data(), static_cast<int>(request.size())) <= 0) return fail();
    std::string answer;
    size_t head_end = std::string::npos;
    size_t length = std::string::npos;
    char chunk[16384];
    for (;;) {
      if (head_end == std::string::npos && (head_end = answer.find("\r\n\r\n")) != std::string::npos)
        length = content_length(std::string_view(answer).substr(0, head_end));
      if (head_end != std::string::npos) {
        // A Content-Length answer is whole at its length; a chunked one at its last, empty chunk.
        if (length != std::string::npos ? answer.size() >= head_end + 4 + length
                                         : answer.size() >= 5 && answer.compare(answer.size() - 5, 5, "0\r\n\r\n") == 0)
          break;
      }
      const int got = SSL_read(ssl_.get(), chunk, sizeof chunk);
      if (got <= 0) return fail();
      answer.append(chunk, static_cast<size_t>(got));
    }
    return answer.compare(0, 9, "HTTP/1.1 ") == 0 ? std::atoi(answer.c_str() + 9) : fail();
  }

 private:
  bool connect_tls() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(api_.port));
    const int one = 1;
    if (fd_ < 0 || inet_pton(AF_INET, api_.host.c_str(), &address.sin_addr) != 1 ||
        setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
        connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      close_connection();
      return false;
    }
    ssl_.reset(SSL_new(api_.tls.get()));
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_.get()), api_.host.c_str());
    SSL_set_fd(ssl_.get(), fd_);
    if (SSL_connect(ssl_.get()) != 1) {
      ERR_print_errors_fp(stderr);
      close_connection();
      return false;
    }
    return true;
  }
  int fail() {
    close_connection();
    return 0;
  }
  void close_connection() {
    ssl_.reset();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  const ApiServer& api_;
  int fd_ = -1;
  SslHandle ssl_;
};

std::string route(std::string_view path, std::string_view body, ApiConnection& api) {
  if (path == "/filter") return floor_wire::pass_all_answer(body);
  if (path == "/prioritize") return "[]";
  if (path == "/bind") {
    const floor_wire::PodBinding binding = floor_wire::pod_binding(body);
    if (api.post(binding.path, binding.body) != 201) return "{\"Error\":\"binding failed\"}";
    floor_wire::note_bound();
    return "{\"Error\":\"\"}";
  }
  return "{\"Error\":\"no such verb\"}";
}

// Requests on one connection until the peer closes it: read the head, then the body it declares,
// answer in one send; what is read past the request stays for the next one.
void serve_connection(int fd, ApiConnection& api) {
  std::string buffer;
  static thread_local char chunk[65536];
  // Appends what one recv brings (no zero-filled room per read: a 5,000-node body takes several).
  auto fill = [&] {
    const ssize_t got = recv(fd, chunk, sizeof chunk, 0);
    if (got > 0) buffer.append(chunk, static_cast<size_t>(got));
    return got > 0;
  };
  for (;;) {
    size_t head_end;
    size_t length = 0;
    while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return (void)close(fd);
    length = content_length(std::string_view(buffer).substr(0, head_end));
    if (length == std::string::npos) length = 0;
    while (buffer.size() < head_end + 4 + length)
      if (!fill()) return (void)close(fd);
    const std::string_view request(buffer);
    const size_t path_start = request.find(' ') + 1;
    const std::string_view path = request.substr(path_start, request.find(' ', path_start) - path_start);
    const std::string answer = route(path, request.substr(head_end + 4, length), api);
    const std::string response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                 std::to_string(answer.size()) + "\r\n\r\n" + answer;
    if (!send_all(fd, response)) return (void)close(fd);
    buffer.erase(0, head_end + 4 + length);
  }
}

// Accepted connections wait here for a worker. The workers live as long as the process, as the
// extender's do: a thread that ended would take its CPU time out of /proc/PID/task, where
// bench/control_plane_cpu.sh reads it (kube-scheduler opens and closes connections during a burst).
class ConnectionQueue {
 public:
  void push(int fd) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      fds_.push_back(fd);
    }
    ready_.notify_one();
  }
  int pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !fds_.empty(); });
    const int fd = fds_.front();
    fds_.pop_front();
    return fd;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<int> fds_;
};

constexpr int kWorkers = 32;  // connections served at once; kube-scheduler keeps a few, binds add some

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: wire_floor_extender PORT API_HOST API_PORT TOKEN_FILE CA_FILE\n";
    return 2;
  }
  static ApiServer api;  // outlives the detached workers
  api.host = argv[2];
  api.port = std::atoi(argv[3]);
  api.token = floor_wire::bearer_token(argv[4]);
  api.tls.reset(SSL_CTX_new(TLS_client_method()));
  if (api.token.empty() || !api.tls || SSL_CTX_load_verify_locations(api.tls.get(), argv[5], nullptr) != 1) {
    std::cerr << "wire_floor_extender: no token in " << argv[4] << " or no CA in " << argv[5] << "\n";
    return 2;
  }
  SSL_CTX_set_verify(api.tls.get(), SSL_VERIFY_PEER, nullptr);

  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[1])));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (listener < 0 || setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 || listen(listener, 128) != 0) {
    // Said aloud: a harness run waiting for binds from a floor that never listened waits forever.
    std::perror("wire_floor_extender: listen");
    return 1;
  }
  static ConnectionQueue accepted;  // outlives the detached workers
  for (int i = 0; i < kWorkers; ++i) {
    std::thread([] {
      ApiConnection connection(api);  // kept across the scheduler's connections: one TLS handshake a worker
      for (;;) serve_connection(accepted.pop(), connection);
    }).detach();
  }
  for (;;) {
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small answers must not wait for an ACK
    accepted.push(fd);
  }
}
