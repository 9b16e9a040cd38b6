#pragma once
// The HTTP server: routes, body limits, health endpoints, request logging. Owns a cpp-httplib server.
//
// Thread-safe: start() blocks serving; stop() may be called from any thread (e.g. a signal handler
// thread) to make start() return.
#include <atomic>
#include <functional>
#include <memory>
#include <map>
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

class WorkerPool;
class TlsCertificates;
class ConnectionServer;
class SimpleExchange;
enum class RequestProblem;

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
  std::pair<int, std::string> problem_answer(RequestProblem problem) const;
  void configure(ConnectionServer& svr, int threads, int max_threads, std::atomic<WorkerPool*>* pool) const;
  void install_verb_routes(ConnectionServer& svr);
  struct VerbAnswer;
  // One verb request, whichever HTTP layer carries it: the body read under the limits, the verb, the
  // request log and the metrics.
  VerbAnswer answer_verb(Verb verb, size_t declared_length, const httplib::ContentReader& read_content,
                         const std::function<bool()>& refused_as_too_large);
  void serve_verb(Verb verb, const httplib::Request& req, httplib::Response& res,
                  const httplib::ContentReader& read_content);
  bool serve_simple(SimpleExchange& exchange);
  void install_probe_routes(httplib::Server& svr);

  std::shared_ptr<const ExtenderService> service_;
  ServerOptions options_;
  std::shared_ptr<Metrics> metrics_;
  MemoryBudget budget_;  // for request bodies; before server_: answers being written hold leases
  std::unique_ptr<TlsCertificates> tls_;  // before server_: its SSL context points at it
  std::unique_ptr<ConnectionServer> server_;
  std::unique_ptr<ConnectionServer> metrics_server_;  // --metrics-port
  std::unique_ptr<TlsCertificates> webhook_tls_;      // before webhook_server_, as tls_
  std::unique_ptr<ConnectionServer> webhook_server_;  // --webhook-port
  std::atomic<WorkerPool*> workers_{nullptr};         // the verb server's workers (owned by it)
  mutable std::map<const httplib::Server*, int> listening_sockets_;  // to raise their listen backlog
  int port_ = 0;
  std::atomic<uint64_t> next_request_id_{1};
};

}  // namespace gpu_extender
