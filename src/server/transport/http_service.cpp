#include "server/transport/http_service.h"
#include "common/thread_name.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

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
#include "server/transport/listener.h"
#include "server/transport/tls_certificates.h"
#include "server/transport/worker_pool.h"

namespace gpu_extender {
namespace {

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

std::unique_ptr<Listener> make_verbs_listener(const ServerOptions& o, std::unique_ptr<TlsCertificates>& tls) {
  std::vector<Route> routes;
  for (const Verb verb : kAllVerbs) routes.push_back({"/" + std::string(verb_name(verb)), "POST"});
  for (const char* path : kProbePaths) routes.push_back({path, "GET"});
  SslContextHandle ctx;
  if (!o.tls_cert_file.empty()) {
    tls = std::make_unique<TlsCertificates>(
        TlsCertificates::Files{o.tls_cert_file, o.tls_key_file, o.tls_client_ca_file, o.tls_client_names});
    ctx = tls->make_context();
  }
  return std::make_unique<Listener>("verbs", "--port", o, std::move(ctx), std::move(routes));
}

}  // namespace

HttpService::HttpService(std::shared_ptr<const ExtenderService> service, const ServerOptions& options,
                         std::shared_ptr<Metrics> metrics)
    : service_(std::move(service)),
      options_(options),
      metrics_(std::move(metrics)),
      budget_(options.memory_budget_bytes),
      verbs_(make_verbs_listener(options, tls_)) {
  install_verb_routes(*verbs_);
  install_probe_routes(verbs_->server());
  metrics_->attach_server([this] {
    ServerCounts c;
    if (const WorkerPool* pool = verbs_->pool()) {
      c.threads = pool->threads();
      c.busy = pool->busy();
      c.waiting = pool->waiting();
    }
    c.binds = service_->bind_wait_stats();
    c.budget_total = budget_.total();
    c.budget_in_use = budget_.in_use();
    c.budget_waits = budget_.waits();
    c.budget_refusals = budget_.refusals();
    for (auto [port, tls] : {std::pair{"verbs", tls_.get()}, std::pair{"webhook", webhook_tls_.get()}}) {
      if (tls == nullptr) continue;
      const TlsCertificates::Expiry expiry = tls->expiry();
      c.certificates.push_back({port, "serving", expiry.serving});
      if (expiry.client_ca) c.certificates.push_back({port, "client-ca", *expiry.client_ca});
    }
    return c;
  });
  if (options_.metrics_port > 0) {
    // Probes and scraping on a plain-HTTP port of their own, apart from the verbs' (possibly TLS) port.
    std::vector<Route> routes;
    for (const char* path : kProbePaths) routes.push_back({path, "GET"});
    metrics_listener_ = std::make_unique<Listener>("metrics", "--metrics-port", options_, nullptr, std::move(routes));
    install_probe_routes(metrics_listener_->server());
  }
  if (options_.webhook_port > 0) {
    // The admission webhook: HTTPS (the API server calls webhooks over nothing else), no client
    // certificate asked (the API server shows none), one route.
    const bool own = !options_.webhook_tls_cert_file.empty();  // else the verbs' certificate
    webhook_tls_ = std::make_unique<TlsCertificates>(
        TlsCertificates::Files{own ? options_.webhook_tls_cert_file : options_.tls_cert_file,
                               own ? options_.webhook_tls_key_file : options_.tls_key_file, "", {}});
    webhook_ = std::make_unique<Listener>("webhook", "--webhook-port", options_, webhook_tls_->make_context(),
                                          std::vector<Route>{{"/mutate-pods", "POST"}});
    webhook_->server().Post("/mutate-pods", [this](const httplib::Request& req, httplib::Response& res,
                                                   const httplib::ContentReader& read_content) {
      serve_review(req, res, read_content);
    });
  }
}

HttpService::~HttpService() { metrics_->attach_server(nullptr); }  // its gauges read this object

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
  answer.ws = service_->workspaces(verb).acquire();
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
  // Shedding load (the pre-routing handler's 503) stays with cpp-httplib's path.
  if (verbs_->overloaded()) return false;
  const WorkerPool* pool = verbs_->pool();
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

void HttpService::install_verb_routes(Listener& verbs) {
  ConnectionServer& svr = verbs.server();
  std::vector<std::string> paths;
  paths.reserve(kAllVerbs.size());
  for (const Verb verb : kAllVerbs) paths.push_back("/" + std::string(verb_name(verb)));
  svr.set_simple_route(paths, [this](SimpleExchange& exchange) { return serve_simple(exchange); });
  for (size_t i = 0; i < kAllVerbs.size(); ++i) {
    const Verb verb = kAllVerbs[i];
    svr.Post(paths[i], [this, verb](const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& read_content) { serve_verb(verb, req, res, read_content); });
  }
}

Status HttpService::bind() {
  if (Status s = verbs_->bind(options_.address, options_.port); !s.ok()) return s;
  port_ = verbs_->port();
  if (metrics_listener_)
    if (Status s = metrics_listener_->bind(options_.address, options_.metrics_port); !s.ok()) return s;
  if (webhook_)
    if (Status s = webhook_->bind(options_.address, options_.webhook_port); !s.ok()) return s;
  return Status::done();
}

bool HttpService::serve() {
  std::thread metrics_thread, webhook_thread;
  if (metrics_listener_) metrics_thread = std::thread([this] {
    name_this_thread("metrics-port");
    metrics_listener_->serve();
  });
  if (webhook_) webhook_thread = std::thread([this] {
    name_this_thread("webhook-port");
    webhook_->serve();
  });
  const bool ok = verbs_->serve();
  if (metrics_listener_) {
    metrics_listener_->stop();
    metrics_thread.join();
  }
  if (webhook_) {
    webhook_->stop();
    webhook_thread.join();
  }
  return ok;
}

void HttpService::stop() {
  verbs_->stop();
  if (metrics_listener_) metrics_listener_->stop();
  if (webhook_) webhook_->stop();
}

}  // namespace gpu_extender
