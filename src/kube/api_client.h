#pragma once
// A small Kubernetes API client on cpp-httplib: GET, POST and watch streams, TLS verified against the
// configured CA, bearer token re-read from its file when it changes (projected service-account tokens
// rotate about hourly), or a client certificate.
//
// Thread-safe: every call opens its own connection (watches hold theirs for minutes), so calls from
// different threads never share a socket.
#include <atomic>
#include <chrono>
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
  // Streams a watch, calling on_line for each complete line. Returns when the server ends the stream,
  // on_line returns false, cancel() is called, or nothing arrives for `idle_timeout`.
  ApiResponse watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                    std::chrono::milliseconds idle_timeout) const;
  // Ends every watch in progress (for shutdown).
  void cancel();

  const ApiEndpoint& endpoint() const { return endpoint_; }
  // The bearer token now: the static one, or the token file's content, re-read when its modification
  // time or size changes (and at least every minute).
  std::string token() const;

 private:
  std::unique_ptr<httplib::ClientImpl> connect(std::chrono::milliseconds read_timeout) const;

  ApiEndpoint endpoint_;
  std::string host_;
  int port_ = 443;
  bool tls_ = true;

  mutable std::mutex token_mutex_;
  mutable std::string cached_token_;
  mutable long long token_stamp_ = -1;  // mtime (ns) xor size of the token file when last read
  mutable std::chrono::steady_clock::time_point token_read_at_{};

  mutable std::mutex watches_mutex_;
  mutable std::vector<httplib::ClientImpl*> watches_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace gpu_extender::kube
