#pragma once
// The HTTP server: routes, body limits, health endpoints, request logging. Owns a cpp-httplib server.
//
// Thread-safe: start() blocks serving; stop() may be called from any thread (e.g. a signal handler
// thread) to make start() return.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "server/transport/server_options.h"
#include "gpu_extender/server/extender_service.h"
#include "server/transport/memory_budget.h"
#include "server/observability/metrics.h"

namespace httplib {
class Server;
struct Request;
struct Response;
class ContentReader;
}

namespace gpu_extender {

class Listener;
class TlsCertificates;
class SimpleExchange;

class HttpService {
 public:
  HttpService(std::shared_ptr<const ExtenderService> service, const ServerOptions& options,
              std::shared_ptr<Metrics> metrics);
  ~HttpService();

  // Binds the listening sockets, or says why it cannot. port() is the bound port after.
  Status bind();
  // Serves until stop(). Returns false when serving failed.
  bool serve();
  void stop();
  int port() const { return port_; }

 private:
  void install_verb_routes(Listener& verbs);
  struct VerbAnswer;
  // One verb request, whichever HTTP layer carries it: the body read under the limits, the verb, the
  // request log and the metrics.
  VerbAnswer answer_verb(Verb verb, size_t declared_length, const httplib::ContentReader& read_content,
                         const std::function<bool()>& refused_as_too_large);
  void serve_verb(Verb verb, const httplib::Request& req, httplib::Response& res,
                  const httplib::ContentReader& read_content);
  bool serve_simple(SimpleExchange& exchange);
  void install_probe_routes(httplib::Server& svr);
  void serve_review(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read_content);

  std::shared_ptr<const ExtenderService> service_;
  ServerOptions options_;
  std::shared_ptr<Metrics> metrics_;
  MemoryBudget budget_;  // for request bodies on every port; before the listeners: answers being written hold leases
  std::unique_ptr<TlsCertificates> tls_;          // before verbs_: its SSL context points at it
  std::unique_ptr<TlsCertificates> webhook_tls_;  // before webhook_, as tls_
  std::unique_ptr<Listener> verbs_;               // --port: the verbs, probes and /metrics
  std::unique_ptr<Listener> metrics_listener_;    // --metrics-port: probes and /metrics
  std::unique_ptr<Listener> webhook_;             // --webhook-port: POST /mutate-pods
  int port_ = 0;
  std::atomic<uint64_t> next_request_id_{1};
};

}  // namespace gpu_extender
