#pragma once
// One listening port of the extender, hardened the same way whatever it serves (the verbs, the metrics
// and probes, the admission webhook), so that no port is softer than another:
//   - its own elastic worker pool (WorkerPool) with the same limits, load shedding (503 with
//     Retry-After past --max-queued-connections waiting) and slow-client shedding (ConnectionLimits::
//     under_pressure): a flood on one port never takes the threads of another, nor delays a real
//     request on its own port past its caller's timeout;
//   - the header, body and request deadlines and the header size bound (ConnectionServer);
//   - a route table checked before a byte of a body is read: an unknown path (404), a wrong method
//     (405 with Allow) or a body sent to a path that takes none (400) is answered at once and the
//     connection closed, so no body is ever read for nothing;
//   - ambiguous framing (two Content-Lengths, or one with Transfer-Encoding) refused;
//   - every error answered as JSON with an Error naming what was wrong.
// What a route does with a body is its own: the verbs' and the webhook's read it with read_body
// (body_reader.h), which counts the size after chunked and gzip decoding and charges the memory budget.
//
// Thread-safe as cpp-httplib's Server.
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/openssl_handles.h"
#include "gpu_extender/common/status.h"
#include "server/transport/connection_server.h"
#include "server/transport/server_options.h"

namespace gpu_extender {

class WorkerPool;

// A path a listener serves and the one method it takes there: GET routes take no body (HEAD too),
// POST routes read one.
struct Route {
  std::string path;
  std::string method;
};

class Listener {
 public:
  // `name` says which port in logs and errors ("verbs", "metrics", "webhook"); `port_flag` is the flag
  // that sets its port. `tls`: HTTPS with this context (null: plain HTTP).
  Listener(std::string name, std::string port_flag, const ServerOptions& options, SslContextHandle tls,
           std::vector<Route> routes);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Where route handlers are installed (server().Get/Post): only paths of the route table are reached.
  ConnectionServer& server() { return *server_; }
  // The pool once serving started (null before).
  const WorkerPool* pool() const { return pool_.load(); }
  // More connections wait for a worker than --max-queued-connections allows.
  bool overloaded() const;

  // Binds (port 0: any free port) with the listen backlog raised; the bound port, or why not.
  Status bind(const std::string& address, int port);
  int port() const { return port_; }
  bool serve() { return server_->listen_after_bind(); }
  void stop() { server_->stop(); }

 private:
  const Route* find_route(const std::string& path) const;
  std::string paths_served() const;
  std::pair<int, std::string> problem_answer(RequestProblem problem) const;
  void install_checks();

  const std::string name_, port_flag_;
  const ServerOptions options_;
  const std::vector<Route> routes_;
  std::atomic<WorkerPool*> pool_{nullptr};  // owned by server_ (cpp-httplib's task queue)
  std::unique_ptr<ConnectionServer> server_;
  int listening_socket_ = -1;
  int port_ = 0;
};

}  // namespace gpu_extender
