// One hardened listening port: see listener.h.
#include "server/transport/listener.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <thread>

#include <sys/socket.h>

#include "server/transport/http_answers.h"
#include "server/transport/worker_pool.h"

namespace gpu_extender {
namespace {

int core_threads(int requested) {
  if (requested > 0) return requested;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(4, 2 * cores);
}

ConnectionLimits connection_limits(const ServerOptions& o, const std::atomic<WorkerPool*>& pool) {
  ConnectionLimits limits;
  limits.read_timeout = std::chrono::seconds(o.read_timeout_seconds);
  limits.header_deadline = std::chrono::seconds(o.header_timeout_seconds);
  limits.request_deadline = std::chrono::seconds(o.request_timeout_seconds);
  limits.max_header_bytes = o.max_header_bytes;
  // Pressure: a connection is waiting for a thread, none is free and the pool cannot grow.
  limits.under_pressure = [&pool] {
    const WorkerPool* workers = pool.load();
    return workers != nullptr && workers->waiting() > 0;
  };
  limits.arrived_at = [] { return WorkerPool::current_task_queued_at(); };
  return limits;
}

// Why the request's framing is ambiguous ("" when it is not): Content-Length given twice with
// different values, or together with Transfer-Encoding.
std::string framing_problem(const httplib::Request& req) {
  const size_t lengths = req.get_header_value_count("Content-Length");
  for (size_t i = 1; i < lengths; ++i)
    if (req.get_header_value("Content-Length", i) != req.get_header_value("Content-Length", 0))
      return "conflicting Content-Length headers";
  if (lengths > 0 && req.has_header("Transfer-Encoding"))
    return "both Content-Length and Transfer-Encoding: the body's length is ambiguous";
  return "";
}

// The request says a body follows its headers.
bool declares_body(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return true;
  const std::string length = req.get_header_value("Content-Length");
  return !length.empty() && length.find_first_not_of('0') != std::string::npos;
}

// An answer given before the body was read: the connection cannot be framed after it unless no body
// was sent, so it closes then.
httplib::Server::HandlerResponse refuse(const httplib::Request& req, httplib::Response& res, int status,
                                        const std::string& why) {
  if (declares_body(req)) ConnectionServer::close_after_answer(res);
  send_error(res, status, why);
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

Listener::Listener(std::string name, std::string port_flag, const ServerOptions& options, SslContextHandle tls,
                   std::vector<Route> routes)
    : name_(std::move(name)),
      port_flag_(std::move(port_flag)),
      options_(options),
      routes_(std::move(routes)),
      server_(std::make_unique<ConnectionServer>(connection_limits(options_, pool_), std::move(tls))) {
  const auto threads = static_cast<size_t>(core_threads(options_.threads));
  const auto max_threads = static_cast<size_t>(options_.max_threads);
  server_->new_task_queue = [this, threads, max_threads] {
    auto* workers = new WorkerPool(threads, max_threads);
    pool_.store(workers);
    return workers;
  };
  server_->set_payload_max_length(options_.max_body_bytes);
  server_->set_problem_answer([this](RequestProblem problem) { return problem_answer(problem); });
  // Headers and body go out in separate writes; with Nagle on, a small answer waits for the client's
  // delayed ACK: 40 ms added to every small /prioritize and /bind.
  server_->set_tcp_nodelay(true);
  // cpp-httplib 0.11 listens with a backlog of 5: connections beyond that, arriving in a burst, are
  // dropped by the kernel and their clients see resets. Keep the listening socket to raise it after bind.
  server_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening_socket_ = sock;
  });
  install_checks();
}

Listener::~Listener() = default;

bool Listener::overloaded() const {
  const WorkerPool* workers = pool_.load();
  return workers != nullptr && workers->waiting() > static_cast<size_t>(options_.max_queued_connections);
}

const Route* Listener::find_route(const std::string& path) const {
  const auto at = std::find_if(routes_.begin(), routes_.end(), [&](const Route& r) { return r.path == path; });
  return at == routes_.end() ? nullptr : &*at;
}

std::string Listener::paths_served() const {
  std::string list;
  for (const Route& r : routes_) list += (list.empty() ? "" : ", ") + r.path;
  return list;
}

// The answer to a request the connection cut off: headers too large, too slow, or shed.
std::pair<int, std::string> Listener::problem_answer(RequestProblem problem) const {
  std::string body;
  switch (problem) {
    case RequestProblem::kHeadersTooLarge:
      encode_error_object("request headers larger than --max-header-bytes (" + std::to_string(options_.max_header_bytes) +
                              " bytes)",
                          body);
      return {431, body};
    case RequestProblem::kShed:
      encode_error_object("overloaded: request headers not received within 1 s while connections wait for a worker; "
                          "retry shortly",
                          body);
      return {503, body};
    default:
      encode_error_object("request headers not received within --header-timeout-seconds (" +
                              std::to_string(options_.header_timeout_seconds) + " s)",
                          body);
      return {408, body};
  }
}

// The checks every request passes before its route sees it, and the answers of everything that fails.
void Listener::install_checks() {
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    ConnectionServer::headers_complete();
    if (std::string framing = framing_problem(req); !framing.empty()) {
      // Two readings of where the body ends is how requests are smuggled past proxies: refuse, close.
      ConnectionServer::close_after_answer(res);
      send_error(res, 400, framing);
      return httplib::Server::HandlerResponse::Handled;
    }
    const Route* route = find_route(req.path);
    if (route == nullptr) return refuse(req, res, 404, "no such path " + req.path + " (serving " + paths_served() + ")");
    const bool get_route = route->method == "GET";
    if (req.method != route->method && !(get_route && req.method == "HEAD")) {
      res.set_header("Allow", route->method);
      return refuse(req, res, 405,
                    "method " + req.method + " not allowed on " + req.path + " (allowed: " + route->method + ")");
    }
    if (get_route && declares_body(req)) return refuse(req, res, 400, req.method + " " + req.path + " takes no body");
    // A Range header asks for part of an answer; for a POST's answer that is only ever a broken one.
    if (req.method == "POST") const_cast<httplib::Request&>(req).ranges.clear();  // parsed before routing
    // Load shedding: a request that reaches a worker while more connections than allowed wait behind it
    // is answered 503 with Retry-After at once (its body unread), so the queue drains instead of
    // growing without bound. Liveness is not load: /healthz is always answered.
    if (!overloaded() || req.path == "/healthz") return httplib::Server::HandlerResponse::Unhandled;
    const size_t waiting = pool_.load()->waiting();
    res.set_header("Retry-After", "1");
    ConnectionServer::close_after_answer(res);
    send_error(res, 503, "overloaded: " + std::to_string(waiting) + " connections waiting; retry shortly");
    spdlog::warn("{} port: shed {} {}: {} connections waiting", name_, req.method, req.path, waiting);
    return httplib::Server::HandlerResponse::Handled;
  });
  // While any connection waits, answers ask the client to close, so one kept-alive client cannot hold
  // a worker.
  server_->set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
    const WorkerPool* workers = pool_.load();
    if (workers != nullptr && workers->waiting() > 0) ConnectionServer::close_after_answer(res);
  });
  server_->set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        // cpp-httplib answers 400 to a request whose headers it could not read; say why when we know.
        if (const RequestProblem problem = ConnectionServer::current_problem();
            res.status == 400 && problem != RequestProblem::kNone) {
          const auto [status, body] = problem_answer(problem);
          res.status = status;
          res.set_header("Connection", "close");
          res.set_content(body, kJson);
          return httplib::Server::HandlerResponse::Handled;
        }
        if (res.status == 404) {
          send_error(res, 404, "no such path " + req.path + " (serving " + paths_served() + ")");
        } else if (res.status == 413) {
          send_error(res, 413,
                     "request body larger than --max-body-bytes (" + std::to_string(options_.max_body_bytes) + " bytes)");
        } else {
          send_error(res, res.status, "HTTP status " + std::to_string(res.status));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
  server_->set_exception_handler([this](const httplib::Request& req, httplib::Response& res, const std::exception_ptr& ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("{} port: path={} internal error: {}", name_, req.path, what);
    send_error(res, 500, "internal error: " + what);
  });
}

Status Listener::bind(const std::string& address, int port) {
  if (port == 0) {
    port_ = server_->bind_to_any_port(address);
    if (port_ <= 0) return Status::failed("cannot listen on " + address + " (any port, " + port_flag_ + ")");
  } else if (server_->bind_to_port(address, port)) {
    port_ = port;
  } else {
    return Status::failed("cannot listen on " + address + ":" + std::to_string(port) + " (" + port_flag_ +
                          "; address in use, or not an address of this host)");
  }
  if (listening_socket_ >= 0) ::listen(listening_socket_, SOMAXCONN);  // a second listen() resizes the backlog
  return Status::done();
}

}  // namespace gpu_extender
