#pragma once
// A small Kubernetes API client: GET, POST, PUT, merge patches and watch streams over HTTP/1.1
// (http_answer.h, api_connection.h), TLS verified against the configured CA, bearer token re-read from
// its file when it changes (projected service-account tokens rotate about hourly), or a client
// certificate.
//
// Connections: GET and POST borrow a kept-alive connection from a small pool (built once, TLS context
// and handshake included, and reused by every later call), so a bind costs one round trip, not a TCP
// and TLS handshake. At most kMaxConnections exist at once; a call beyond waits for one to come back
// (client-go multiplexes every call over one HTTP/2 connection; a handshake per concurrent bind in a
// burst of a hundred costs far more than waiting a round trip for a free connection). Watches open
// connections of their own and hold them for minutes. Every connection shares one TLS context (the
// CA store parsed once); when the CA file changes, the pool is emptied and a new context verifies
// new connections against the new CA.
//
// Thread-safe: a pooled connection is used by one call at a time; calls from different threads never
// share a socket.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/common/status.h"
#include "gpu_extender/kube/kube_config.h"

struct ssl_ctx_st;

namespace gpu_extender::kube {

class ApiConnection;

struct ApiResponse {
  int status = 0;          // 0: no HTTP answer (see error)
  std::string body;
  std::string error;       // transport error, when status is 0
  bool ok() const { return status >= 200 && status < 300; }
  // "HTTP 404: pods \"x\" not found" or "connection refused": for logs and Error fields.
  std::string describe() const;
};

class ApiClient {
 public:
  explicit ApiClient(ApiEndpoint endpoint);
  ~ApiClient();

  ApiResponse get(const std::string& path, std::chrono::milliseconds timeout) const;
  ApiResponse post(const std::string& path, const std::string& json, std::chrono::milliseconds timeout) const;
  // Replaces an object (an update: metadata.resourceVersion in the body makes it conditional, 409 if stale).
  ApiResponse put(const std::string& path, const std::string& json, std::chrono::milliseconds timeout) const;
  // A JSON merge patch (RFC 7386): the fields given are set, null ones removed.
  ApiResponse merge_patch(const std::string& path, const std::string& json, std::chrono::milliseconds timeout) const;
  // Streams a watch, calling on_line for each complete line (an error answer's body is kept in the
  // response instead). Returns when the server ends the stream,
  // on_line returns false, cancel() is called, or nothing arrives for `idle_timeout`.
  // `batch`: while events come less than this apart, the stream is read once per `batch` (the events
  // of that time together) instead of once per event: a burst's events cost one wake-up a batch, and
  // the API server's writes wake nobody in between. Events then reach on_line up to `batch` late;
  // sparse events are read as they come. Zero: always as they come. `on_open` (when given) is called
  // once the server has answered 2xx, before any event: a quiet watch is up though it sends nothing.
  ApiResponse watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                    std::chrono::milliseconds idle_timeout,
                    std::chrono::milliseconds batch = std::chrono::milliseconds::zero(),
                    const std::function<void()>& on_open = nullptr) const;
  // Ends every watch in progress (for shutdown).
  void cancel();
  // Ends the rest of every watch waiting out its batch, so that the events that came meanwhile are
  // read now; false when no watch was resting (what has come is read already, or nothing has).
  bool hurry_watches() const;

  const ApiEndpoint& endpoint() const { return endpoint_; }
  // The bearer token now: the static one, or the token file's content, re-read when its modification
  // time or size changes (looked at once a second, or now with `reread`: after a 401) and at least
  // every minute.
  std::string token(bool reread = false) const;

 private:
  // A new connection, TLS with the current context.
  Result<std::unique_ptr<ApiConnection>> connect() const;
  // A kept-alive connection from the pool (not with `fresh`), or a new one; `reused`: it was pooled.
  // Fails when none can be made. `ca_generation`: the CA it was made under, for release().
  Result<std::unique_ptr<ApiConnection>> acquire(std::chrono::milliseconds wait, uint64_t& ca_generation, bool fresh,
                                                 bool& reused) const;
  // `connection` null: it was dropped (transport error, or the server closes it). A connection made
  // under a CA replaced meanwhile is dropped too.
  void release(std::unique_ptr<ApiConnection> connection, uint64_t ca_generation) const;
  // The CA PEM now: the endpoint's, re-read from ca_file when that file changes (empties the pool and
  // makes a new TLS context).
  const std::string& current_ca_pem() const;
  // The TLS context every connection shares while `ca_pem` is the CA (throws KubeConfigError on bad PEM).
  std::shared_ptr<ssl_ctx_st> tls_context_for(const std::string& ca_pem) const;

  struct Exchange {
    std::string_view method, content_type, body;
    const std::string* path = nullptr;
    bool keep_alive = true;
    std::chrono::milliseconds timeout{0};
    // Body pieces of a 2xx answer go here instead of into the response's body (watch streams).
    const std::function<bool(std::string_view)>* on_data = nullptr;
  };
  // One request and its answer on `connection`: false when no whole HTTP answer came (out.error
  // says why). `reusable`: the connection may carry another request.
  bool exchange(ApiConnection& connection, const Exchange& request, const std::string& token, ApiResponse& out,
                bool& reusable) const;
  ApiResponse pooled(const Exchange& request) const;

  ApiEndpoint endpoint_;
  std::string host_;
  std::string host_header_;  // host:port, brackets around an IPv6 address
  int port_ = 443;
  bool tls_ = true;

  mutable std::mutex token_mutex_;
  mutable std::string cached_token_;
  mutable long long token_stamp_ = -1;  // mtime (ns) xor size of the token file when last read
  mutable std::chrono::steady_clock::time_point token_read_at_{};
  mutable std::chrono::steady_clock::time_point token_checked_at_{};  // the file's last stat()

  mutable std::mutex pool_mutex_;
  mutable std::condition_variable pool_freed_;
  mutable std::vector<std::unique_ptr<ApiConnection>> idle_;  // kept-alive connections, most recent last
  mutable size_t in_use_ = 0;                                 // borrowed by calls in progress
  mutable std::string ca_pem_;                                // what connections verify against
  mutable std::shared_ptr<ssl_ctx_st> tls_context_;           // made from ca_pem_ (null: plain HTTP)
  mutable long long ca_stamp_ = -1;
  mutable uint64_t ca_generation_ = 0;  // bumped when the CA changes
  mutable std::chrono::steady_clock::time_point ca_checked_at_{};

  void rest_between_batches(std::chrono::milliseconds batch) const;

  mutable std::mutex watches_mutex_;
  mutable std::vector<ApiConnection*> watches_;
  // Watches resting between two batches of events (watch's `batch`), and what ends their rest early.
  mutable std::mutex rest_mutex_;
  mutable std::condition_variable rest_cv_;
  mutable int resting_watches_ = 0;
  mutable uint64_t hurry_generation_ = 0;
  std::atomic<bool> cancelled_{false};
};

}  // namespace gpu_extender::kube
