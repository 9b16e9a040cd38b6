#include "server/transport/http_service.h"
#include "common/thread_name.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include <sys/socket.h>

#include "gpu_extender/common/build_info.h"
#include "common/json_writer.h"
#include "gpu_extender/wire/wire.h"
#include "gpu_extender/wire/wire_encode.h"
#include "server/observability/metrics.h"
#include "server/transport/body_reader.h"
#include "server/observability/request_log.h"
#include "server/service/workspace.h"
#include "server/transport/connection_server.h"
#include "server/transport/http_answers.h"
#include "server/transport/tls_certificates.h"
#include "server/transport/worker_pool.h"

namespace gpu_extender {
namespace {

// How long a request waits for room in the memory budget: kube-scheduler gives an extender call 5 s
// (httpTimeout's default) in all; waiting longer would answer a call it has given up on.
constexpr std::chrono::seconds kBudgetWait{5};

// The Error of a 500 for an exception a handler let out, logged; either HTTP path answers it.
std::string internal_error(std::string_view path, std::string_view what) {
  spdlog::error("path={} internal error: {}", path, what);
  return "internal error: " + std::string(what);
}

// Serves the workspace's answer without copying it, and with a fixed length: cpp-httplib then neither
// copies nor gzips it (compressing megabytes of node objects costs more than sending them over a
// cluster network). The workspace returns to the pool once the answer is written.
// The body's memory charge is held until the answer is written.
void send_answer(httplib::Response& res, int status, std::shared_ptr<Workspace> ws,
                 std::shared_ptr<MemoryBudget::Lease> lease) {
  res.status = status;
  if (status >= 400) {
    res.set_content(ws->answer, kJson);  // small; and the error handler sees a body
    return;
  }
  const size_t length = ws->answer.size();
  res.set_content_provider(length, kJson, [ws = std::move(ws), lease = std::move(lease)](size_t offset, size_t n,
                                                                                        httplib::DataSink& sink) {
    return sink.write(ws->answer.data() + offset, n);
  });
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

int worker_threads(int requested) {
  if (requested > 0) return requested;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(4, 2 * cores);
}

}  // namespace

namespace {
ConnectionLimits connection_limits(const ServerOptions& o) {
  ConnectionLimits limits;
  limits.read_timeout = std::chrono::seconds(o.read_timeout_seconds);
  limits.header_deadline = std::chrono::seconds(o.header_timeout_seconds);
  limits.request_deadline = std::chrono::seconds(o.request_timeout_seconds);
  limits.max_header_bytes = o.max_header_bytes;
  return limits;
}

std::unique_ptr<ConnectionServer> make_server(const ServerOptions& o, std::unique_ptr<TlsCertificates>& tls) {
  if (o.tls_cert_file.empty()) return std::make_unique<ConnectionServer>(connection_limits(o), nullptr);
  tls = std::make_unique<TlsCertificates>(o.tls_cert_file, o.tls_key_file, o.tls_client_ca_file);
  SslContextHandle ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx || !tls->configure(*ctx))
    throw std::runtime_error("cannot serve HTTPS: --tls-client-ca-file " + o.tls_client_ca_file + " could not be loaded");
  return std::make_unique<ConnectionServer>(connection_limits(o), std::move(ctx));
}
}  // namespace

HttpService::HttpService(std::shared_ptr<const ExtenderService> service, const ServerOptions& options,
                         std::shared_ptr<Metrics> metrics)
    : service_(std::move(service)),
      options_(options),
      metrics_(std::move(metrics)),
      budget_(options.memory_budget_bytes),
      server_(make_server(options, tls_)) {
  configure(*server_, worker_threads(options_.threads), options_.max_threads, &workers_);
  // Load shedding: a request that reaches a worker while more connections than allowed wait behind it
  // is answered 503 with Retry-After at once, so the queue drains instead of growing without bound.
  // While any wait, answers ask the client to close, so one kept-alive client cannot hold a worker.
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    ConnectionServer::headers_complete();
    if (std::string framing = framing_problem(req); !framing.empty()) {
      // Two readings of where the body ends is how requests are smuggled past proxies: refuse, close.
      ConnectionServer::close_after_answer(res);
      send_error(res, 400, framing);
      return httplib::Server::HandlerResponse::Handled;
    }
    // A Range header asks for part of an answer; for a verb's answer that is only ever a broken one.
    if (req.method == "POST") const_cast<httplib::Request&>(req).ranges.clear();  // parsed before routing
    WorkerPool* pool = workers_.load();
    if (!pool || pool->waiting() <= static_cast<size_t>(options_.max_queued_connections)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (req.path == "/healthz") return httplib::Server::HandlerResponse::Unhandled;  // liveness is not load
    res.set_header("Retry-After", "1");
    ConnectionServer::close_after_answer(res);  // the body is not read
    send_error(res, 503, "overloaded: " + std::to_string(pool->waiting()) + " connections waiting; retry shortly");
    spdlog::warn("shed {} {}: {} connections waiting", req.method, req.path, pool->waiting());
    return httplib::Server::HandlerResponse::Handled;
  });
  server_->set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
    WorkerPool* pool = workers_.load();
    if (pool && pool->waiting() > 0) ConnectionServer::close_after_answer(res);
  });
  install_verb_routes(*server_);
  install_probe_routes(*server_);
  metrics_->attach_server([this] {
    ServerCounts c;
    if (const WorkerPool* pool = workers_.load()) {
      c.threads = pool->threads();
      c.busy = pool->busy();
      c.waiting = pool->waiting();
    }
    c.binds = service_->bind_wait_stats();
    c.budget_total = budget_.total();
    c.budget_in_use = budget_.in_use();
    c.budget_waits = budget_.waits();
    c.budget_refusals = budget_.refusals();
    return c;
  });
  if (options_.metrics_port > 0) {
    // Probes and scraping on a plain-HTTP port of their own, apart from the verbs' (possibly TLS) port.
    metrics_server_ = std::make_unique<ConnectionServer>(connection_limits(options_), nullptr);
    configure(*metrics_server_, 2, 32, nullptr);  // kept-alive scrapes and probes each hold a thread
    metrics_server_->set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
      ConnectionServer::headers_complete();
      return httplib::Server::HandlerResponse::Unhandled;
    });
    install_probe_routes(*metrics_server_);
  }
  if (options_.webhook_port > 0) {
    // The admission webhook: HTTPS (the API server calls webhooks over nothing else), no client
    // certificate asked, one route. Admission reviews are small: the body limit is the same.
    const bool own = !options_.webhook_tls_cert_file.empty();  // else the verbs' certificate
    webhook_tls_ = std::make_unique<TlsCertificates>(own ? options_.webhook_tls_cert_file : options_.tls_cert_file,
                                                     own ? options_.webhook_tls_key_file : options_.tls_key_file, "");
    SslContextHandle ctx(SSL_CTX_new(TLS_server_method()));
    if (!ctx || !webhook_tls_->configure(*ctx)) throw std::runtime_error("cannot serve the admission webhook over HTTPS");
    webhook_server_ = std::make_unique<ConnectionServer>(connection_limits(options_), std::move(ctx));
    configure(*webhook_server_, 2, 32, nullptr);
    webhook_server_->set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
      ConnectionServer::headers_complete();
      return httplib::Server::HandlerResponse::Unhandled;
    });
    webhook_server_->Post("/mutate-pods", [this](const httplib::Request& req, httplib::Response& res) {
      const ExtenderService::AdmissionReply reply = service_->admit(req.body);
      spdlog::info("admission {}: {}", reply.status, reply.detail);
      res.status = reply.status;
      res.set_content(reply.body, "application/json");
    });
  }
}

HttpService::~HttpService() { metrics_->attach_server(nullptr); }  // its gauges read this object

// The answer to a request the connection cut off: too slow, or headers too large.
std::pair<int, std::string> HttpService::problem_answer(RequestProblem problem) const {
  std::string body;
  if (problem == RequestProblem::kHeadersTooLarge) {
    encode_error_object("request headers larger than --max-header-bytes (" + std::to_string(options_.max_header_bytes) + " bytes)", body);
    return {431, body};
  }
  encode_error_object("request headers not received within --header-timeout-seconds (" +
                          std::to_string(options_.header_timeout_seconds) + " s)",
                      body);
  return {408, body};
}

// Settings and handlers every listener shares: timeouts, keep-alive, JSON error bodies.
void HttpService::configure(ConnectionServer& svr, int threads, int max_threads, std::atomic<WorkerPool*>* pool) const {
  svr.new_task_queue = [threads, max_threads, pool] {
    auto* workers = new WorkerPool(static_cast<size_t>(threads), static_cast<size_t>(max_threads));
    if (pool) pool->store(workers);
    return workers;
  };
  svr.set_payload_max_length(options_.max_body_bytes);
  // Timeouts, keep-alive and header limits: see ConnectionServer.
  svr.set_problem_answer([this](RequestProblem problem) { return problem_answer(problem); });
  // Headers and body go out in separate writes; with Nagle on, a small answer waits for the client's
  // delayed ACK: 40 ms added to every small /prioritize and /bind.
  svr.set_tcp_nodelay(true);
  // cpp-httplib 0.11 listens with a backlog of 5: connections beyond that, arriving in a burst, are
  // dropped by the kernel and their clients see resets. Keep the listening socket to raise it after bind.
  svr.set_socket_options([this, &svr](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening_sockets_[&svr] = sock;
  });
  svr.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    // cpp-httplib answers 400 to a request whose headers it could not read; say why when we know.
    if (const RequestProblem problem = ConnectionServer::current_problem(); res.status == 400 && problem != RequestProblem::kNone) {
      const auto [status, body] = problem_answer(problem);
      res.status = status;
      res.set_header("Connection", "close");
      res.set_content(body, kJson);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (res.status == 404) {
      send_error(res, 404, "no such path " + req.path +
                               " (serving /filter, /prioritize, /bind, /preempt, /explain, /healthz, /readyz, /version, /metrics)");
    } else if (res.status == 413) {
      send_error(res, 413, "request body larger than --max-body-bytes (" + std::to_string(options_.max_body_bytes) +
                               " bytes)");
    } else {
      send_error(res, res.status, "HTTP status " + std::to_string(res.status));
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler([](const httplib::Request& req, httplib::Response& res, const std::exception_ptr& ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, internal_error(req.path, what));
  });
}

struct HttpService::VerbAnswer {
  int status = 200;
  uint64_t request_id = 0;
  bool retry_after = false;  // over the memory budget: "Retry-After: 1"
  bool close = false;        // the body was not read to its end
  std::shared_ptr<Workspace> ws;  // ws->answer is the body
  std::shared_ptr<MemoryBudget::Lease> lease;  // the body's memory charge, held until the answer is written
};

HttpService::VerbAnswer HttpService::answer_verb(Verb verb, size_t declared_length,
                                                 const httplib::ContentReader& read_content,
                                                 const std::function<bool()>& refused_as_too_large) {
  const auto started = std::chrono::steady_clock::now();
  VerbAnswer answer;
  RequestRecord record;
  record.id = next_request_id_.fetch_add(1);
  record.verb = verb;
  answer.request_id = record.id;
  answer.lease = std::make_shared<MemoryBudget::Lease>(budget_);
  answer.ws = service_->workspaces().acquire();
  Workspace& ws = *answer.ws;
  const BodyRead read =
      read_body(declared_length, read_content, refused_as_too_large,
                {options_.max_body_bytes, options_.request_timeout_seconds}, budget_, *answer.lease,
                started + kBudgetWait, ws.body);
  const auto body_read = std::chrono::steady_clock::now();
  VerbSummary summary;
  summary.want_reasons = spdlog::should_log(spdlog::level::debug);
  if (read.complete()) {
    record.status = service_->handle(verb, ws, summary);
  } else {
    record.status = read.status;
    summary.error = read.error;
    encode_error_object(summary.error, ws.answer);
    answer.retry_after = read.outcome == BodyRead::Outcome::kOverBudget;
    answer.close = read.close_connection();
  }
  const auto done = std::chrono::steady_clock::now();
  record.ms = std::chrono::duration<double, std::milli>(done - started).count();
  record.read_ms = std::chrono::duration<double, std::milli>(body_read - started).count();
  record.bytes_in = ws.body.size();
  record.bytes_out = ws.answer.size();
  log_request(record, summary);
  metrics_->observe(verb_name(verb), record.status, record.ms / 1000.0, record.bytes_in, summary);
  answer.status = record.status;
  return answer;
}

// A verb request through cpp-httplib (what the simple route does not take).
void HttpService::serve_verb(Verb verb, const httplib::Request& req, httplib::Response& res,
                             const httplib::ContentReader& read_content) {
  const size_t declared = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
  VerbAnswer answer = answer_verb(verb, declared, read_content, [&res] { return res.status == 413; });
  if (answer.retry_after) res.set_header("Retry-After", "1");
  if (answer.close) ConnectionServer::close_after_answer(res);
  res.set_header("X-Request-Id", std::to_string(answer.request_id));
  send_answer(res, answer.status, std::move(answer.ws), std::move(answer.lease));
}

// A verb request kube-scheduler's way (simple_request.h), read and answered without cpp-httplib: the
// same answer, headers and all, as serve_verb's through it.
bool HttpService::serve_simple(SimpleExchange& exchange) {
  WorkerPool* pool = workers_.load();
  // Shedding load (the pre-routing handler's 503) stays with cpp-httplib's path.
  if (pool && pool->waiting() > static_cast<size_t>(options_.max_queued_connections)) return false;
  const Verb verb = kAllVerbs[exchange.head().path_index];  // the route's paths are kAllVerbs' (install_verb_routes)
  const size_t declared = exchange.head().content_length;
  // A body declared larger than the limit is not read (cpp-httplib's payload limit); read_body answers
  // it 413 from the declared length, so nothing else stops the reading for its size.
  const httplib::ContentReader reader(
      [&](const httplib::ContentReceiver& receiver) {
        return declared <= options_.max_body_bytes && exchange.read_body(receiver);
      },
      [](const httplib::MultipartContentHeader&, const httplib::ContentReceiver&) { return false; });
  VerbAnswer answer;
  try {
    answer = answer_verb(verb, declared, reader, [] { return false; });
  } catch (const std::exception& e) {  // as the exception handler answers on cpp-httplib's path
    std::string body;
    encode_error_object(internal_error(exchange.head().path, e.what()), body);
    exchange.close_after_answer();
    exchange.answer(500, kJson, "", body);
    return true;
  }
  if (answer.close) exchange.close_after_answer();
  if (pool && pool->waiting() > 0) exchange.close_after_answer();  // as the post-routing handler
  std::string more_headers;
  if (answer.retry_after) more_headers += "Retry-After: 1\r\n";
  more_headers.append("X-Request-Id: ").append(std::to_string(answer.request_id)).append("\r\n");
  exchange.answer(answer.status, kJson, more_headers, answer.ws->answer);
  return true;
}

void HttpService::install_verb_routes(ConnectionServer& svr) {
  std::vector<std::string> paths;
  paths.reserve(kAllVerbs.size());
  for (const Verb verb : kAllVerbs) paths.push_back("/" + std::string(verb_name(verb)));
  svr.set_simple_route(paths, [this](SimpleExchange& exchange) { return serve_simple(exchange); });
  for (size_t i = 0; i < kAllVerbs.size(); ++i) {
    const Verb verb = kAllVerbs[i];
    const std::string& path = paths[i];
    svr.Post(path, [this, verb](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& read_content) { serve_verb(verb, req, res, read_content); });
    method_not_allowed(svr, path, "POST");
  }
}

Status HttpService::bind() {
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.address);
    if (port_ <= 0) return Status::failed("cannot listen on " + options_.address + " (any port)");
  } else if (server_->bind_to_port(options_.address, options_.port)) {
    port_ = options_.port;
  } else {
    return Status::failed("cannot listen on " + options_.address + ":" + std::to_string(options_.port) +
                          " (address in use, or not an address of this host)");
  }
  if (metrics_server_ && !metrics_server_->bind_to_port(options_.address, options_.metrics_port))
    return Status::failed("cannot listen on " + options_.address + ":" + std::to_string(options_.metrics_port) +
                          " (--metrics-port)");
  if (webhook_server_ && !webhook_server_->bind_to_port(options_.address, options_.webhook_port))
    return Status::failed("cannot listen on " + options_.address + ":" + std::to_string(options_.webhook_port) +
                          " (--webhook-port)");
  for (const auto& [server, sock] : listening_sockets_) ::listen(sock, SOMAXCONN);  // a second listen() resizes the backlog
  return Status::done();
}

bool HttpService::serve() {
  std::thread metrics_thread, webhook_thread;
  if (metrics_server_) metrics_thread = std::thread([this] {
    name_this_thread("metrics-port");
    metrics_server_->listen_after_bind();
  });
  if (webhook_server_) webhook_thread = std::thread([this] {
    name_this_thread("webhook-port");
    webhook_server_->listen_after_bind();
  });
  const bool ok = server_->listen_after_bind();
  if (metrics_server_) {
    metrics_server_->stop();
    metrics_thread.join();
  }
  if (webhook_server_) {
    webhook_server_->stop();
    webhook_thread.join();
  }
  return ok;
}

void HttpService::stop() {
  server_->stop();
  if (metrics_server_) metrics_server_->stop();
  if (webhook_server_) webhook_server_->stop();
}

}  // namespace gpu_extender
