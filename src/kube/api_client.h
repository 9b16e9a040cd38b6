#pragma once
// A small Kubernetes API client on cpp-httplib: GET, POST and watch streams, TLS verified against the
// configured CA, bearer token re-read from its file when it changes (projected service-account tokens
// rotate about hourly), or a client certificate.
//
// Connections: GET and POST borrow a kept-alive connection from a small pool (built once, TLS context
// and handshake included, and reused by every later call), so a bind costs one round trip, not a TCP
// and TLS handshake. At most kMaxConnections exist at once; a call beyond waits for one to come back
// (client-go multiplexes every call over one HTTP/2 connection; a handshake per concurrent bind in a
// burst of a hundred costs far more than waiting a round trip for a free connection). Watches open connections of their own and hold them for minutes. When the CA
// file changes, the pool is emptied and new connections verify against the new CA.
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

#include "gpu_extender/kube_config.h"

namespace httplib {
class ClientImpl;
}

namespace gpu_extender::kube {

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
  // Streams a watch, calling on_line for each complete line. Returns when the server ends the stream,
  // on_line returns false, cancel() is called, or nothing arrives for `idle_timeout`.
  // `batch`: while events come less than this apart, the stream is read once per `batch` (the events
  // of that time together) instead of once per event: a burst's events cost one wake-up a batch, and
  // the API server's writes wake nobody in between. Events then reach on_line up to `batch` late;
  // sparse events are read as they come. Zero: always as they come.
  ApiResponse watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                    std::chrono::milliseconds idle_timeout,
                    std::chrono::milliseconds batch = std::chrono::milliseconds::zero()) const;
  // Ends every watch in progress (for shutdown).
  void cancel();

  const ApiEndpoint& endpoint() const { return endpoint_; }
  // The bearer token now: the static one, or the token file's content, re-read when its modification
  // time or size changes (looked at once a second, or now with `reread`: after a 401) and at least
  // every minute.
  std::string token(bool reread = false) const;

 private:
  std::unique_ptr<httplib::ClientImpl> connect(std::chrono::milliseconds read_timeout) const;
  // A kept-alive connection from the pool, or a new one; give it back with release() when the call
  // got an HTTP answer (the connection is sound), drop it otherwise.
  // `ca_generation`: the CA it was made under, for release().
  // A pooled connection, or a new one (always with `fresh`); `reused`: it was pooled.
  std::unique_ptr<httplib::ClientImpl> acquire(std::chrono::milliseconds read_timeout, uint64_t& ca_generation,
                                               bool fresh, bool& reused) const;
  // `client` null: the connection was dropped (transport error, or the server closes it).
  // A connection made under a CA replaced meanwhile is dropped too.
  void release(std::unique_ptr<httplib::ClientImpl> client, uint64_t ca_generation) const;
  // The CA PEM now: the endpoint's, re-read from ca_file when that file changes (empties the pool).
  const std::string& current_ca_pem() const;
  template <typename Call>
  ApiResponse pooled(std::chrono::milliseconds timeout, const Call& call) const;

  ApiEndpoint endpoint_;
  std::string host_;
  int port_ = 443;
  bool tls_ = true;

  mutable std::mutex token_mutex_;
  mutable std::string cached_token_;
  mutable long long token_stamp_ = -1;  // mtime (ns) xor size of the token file when last read
  mutable std::chrono::steady_clock::time_point token_read_at_{};
  mutable std::chrono::steady_clock::time_point token_checked_at_{};  // the file's last stat()

  mutable std::mutex pool_mutex_;
  mutable std::condition_variable pool_freed_;
  mutable std::vector<std::unique_ptr<httplib::ClientImpl>> idle_;  // kept-alive connections, most recent last
  mutable size_t in_use_ = 0;                                       // borrowed by calls in progress
  mutable std::string ca_pem_;                                      // what connections verify against
  mutable long long ca_stamp_ = -1;
  mutable uint64_t ca_generation_ = 0;  // bumped when the CA changes
  mutable std::chrono::steady_clock::time_point ca_checked_at_{};

  mutable std::mutex watches_mutex_;
  mutable std::vector<httplib::ClientImpl*> watches_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace gpu_extender::kube
