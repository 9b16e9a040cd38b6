#include "gpu_extender/kube/api_client.h"

#include "api_connection.h"
#include "common/file_text.h"

#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <thread>

namespace gpu_extender::kube {
namespace {

// Modification time (ns) xor size: changes when a file is rewritten or swapped (ConfigMap/Secret
// volumes swap a symlink). -2 when the file cannot be read.
long long file_stamp(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return -2;
  return (static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec) ^ st.st_size;
}

// Kept-alive connections for GET and POST (watches have their own): enough for the scheduler's
// concurrent binding goroutines on loopback-fast round trips.
constexpr size_t kMaxConnections = 8;
constexpr std::chrono::seconds kConnectTimeout{5};
// The largest answer body read (a page of a list is a few MB; a watch stream is read as it comes and
// has no such limit).
constexpr uint64_t kMaxAnswerBytes = uint64_t{256} << 20;
// A pooled connection idle longer than this is checked before it is reused (the server may have closed it).
constexpr std::chrono::seconds kCheckIdleAfter{2};


std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::string ApiResponse::describe() const {
  if (status == 0) return error.empty() ? "no answer" : error;
  std::string message;
  // A Kubernetes Status object carries "message"; quote it when present, without a JSON parser here.
  const size_t at = body.find("\"message\":\"");
  if (at != std::string::npos) {
    const size_t start = at + 11;
    size_t end = start;
    while (end < body.size() && body[end] != '"') end += body[end] == '\\' ? 2 : 1;
    message = body.substr(start, std::min(end, body.size()) - start);
  }
  return "HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

ApiClient::ApiClient(ApiEndpoint endpoint) : endpoint_(std::move(endpoint)) {
  std::string rest = endpoint_.server;
  tls_ = rest.rfind("https://", 0) == 0;
  rest = rest.substr(tls_ ? 8 : 7);
  if (const size_t slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
  port_ = tls_ ? 443 : 80;
  const size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    port_ = std::atoi(rest.c_str() + colon + 1);
    rest = rest.substr(0, colon);
  }
  if (!rest.empty() && rest.front() == '[') rest = rest.substr(1, rest.size() - 2);
  host_ = rest;
  host_header_ = (host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_) + ":" + std::to_string(port_);
  if (!tls_ && !endpoint_.client_cert_pem.empty())
    throw KubeConfigError("client certificates need an https:// API server");
  ca_pem_ = endpoint_.ca_pem;
  if (tls_) tls_context_ = tls_context_for(ca_pem_);  // validates the CA and the client certificate now
  if (!endpoint_.ca_file.empty()) ca_stamp_ = file_stamp(endpoint_.ca_file);
  ca_checked_at_ = std::chrono::steady_clock::now();
}

std::shared_ptr<ssl_ctx_st> ApiClient::tls_context_for(const std::string& ca_pem) const {
  SslContextHandle ctx = make_api_tls_context(ca_pem, !endpoint_.insecure_skip_tls_verify, endpoint_.client_cert_pem,
                                              endpoint_.client_key_pem);
  return {ctx.release(), SSL_CTX_free};
}

const std::string& ApiClient::current_ca_pem() const {
  // Called with pool_mutex_ held. A stat() at most once a second: cheap next to a round trip.
  const auto now = std::chrono::steady_clock::now();
  if (endpoint_.ca_file.empty() || now - ca_checked_at_ < std::chrono::seconds(1)) return ca_pem_;
  ca_checked_at_ = now;
  const long long stamp = file_stamp(endpoint_.ca_file);
  if (stamp == ca_stamp_) return ca_pem_;
  std::optional<std::string> text = read_file_text(endpoint_.ca_file);
  if (!text) return ca_pem_;  // mid-swap: keep verifying against the CA we have
  if (*text != ca_pem_ && tls_) {
    try {
      tls_context_ = tls_context_for(*text);
    } catch (const KubeConfigError&) {
      return ca_pem_;  // a half-written file: try again at the next change
    }
  }
  ca_stamp_ = stamp;
  if (*text != ca_pem_) {
    ca_pem_ = std::move(*text);
    idle_.clear();  // connections made under the old CA are not reused (nor those in use: see release)
    ++ca_generation_;
  }
  return ca_pem_;
}

ApiClient::~ApiClient() = default;

std::string ApiClient::token(bool reread) const {
  if (endpoint_.token_file.empty()) return endpoint_.token;
  std::lock_guard<std::mutex> lock(token_mutex_);
  const auto now = std::chrono::steady_clock::now();
  // A stat() at most once a second: per call it was a tenth of a bind's CPU. A rotation within that
  // second shows as a 401, which re-reads the file at once (pooled()).
  if (!reread && !cached_token_.empty() && now - token_checked_at_ < std::chrono::seconds(1)) return cached_token_;
  token_checked_at_ = now;
  const long long stamp = file_stamp(endpoint_.token_file);
  if (stamp != token_stamp_ || now - token_read_at_ > std::chrono::minutes(1)) {
    if (std::optional<std::string> text = read_file_text(endpoint_.token_file)) {
      cached_token_ = trim(std::move(*text));
      token_stamp_ = stamp;
      token_read_at_ = now;
    }
  }
  return cached_token_;
}

Result<std::unique_ptr<ApiConnection>> ApiClient::connect() const {
  std::shared_ptr<ssl_ctx_st> tls;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    (void)current_ca_pem();  // a new CA: a new context
    tls = tls_context_;
  }
  return ApiConnection::open(host_, port_, tls.get(), kConnectTimeout);
}

Result<std::unique_ptr<ApiConnection>> ApiClient::acquire(std::chrono::milliseconds wait, uint64_t& ca_generation,
                                                          bool fresh, bool& reused) const {
  std::unique_ptr<ApiConnection> connection;
  {
    std::unique_lock<std::mutex> lock(pool_mutex_);
    (void)current_ca_pem();  // empties the pool when the CA changed
    // All connections busy: wait for one (bounded by the call's own timeout), then open one if none.
    pool_freed_.wait_for(lock, wait, [this] { return !idle_.empty() || in_use_ < kMaxConnections; });
    while (!idle_.empty() && !fresh && !connection) {
      connection = std::move(idle_.back());
      idle_.pop_back();
      // Idle long enough for the server to have closed it: look before sending on it.
      if (std::chrono::steady_clock::now() - connection->last_used > kCheckIdleAfter && !connection->still_open())
        connection.reset();
    }
    ++in_use_;
    ca_generation = ca_generation_;
  }
  reused = connection != nullptr;
  if (connection) return connection;
  Result<std::unique_ptr<ApiConnection>> made = connect();
  if (!made.ok()) release(nullptr, ca_generation);
  return made;
}

void ApiClient::release(std::unique_ptr<ApiConnection> connection, uint64_t ca_generation) const {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    --in_use_;
    if (connection && ca_generation == ca_generation_ && idle_.size() < kMaxConnections) {
      connection->last_used = std::chrono::steady_clock::now();
      idle_.push_back(std::move(connection));
    }
  }
  pool_freed_.notify_one();
}

bool ApiClient::exchange(ApiConnection& connection, const Exchange& request, const std::string& token,
                         ApiResponse& out, bool& reusable) const {
  reusable = false;
  out = ApiResponse{};
  // Head and body in one send: one TLS record, one segment.
  std::string bytes = request_head(request.method, *request.path, host_header_, token, request.content_type,
                                   request.body.size(), request.keep_alive);
  bytes.append(request.body);
  connection.set_read_timeout(request.timeout);
  if (const Status sent = connection.send(bytes); !sent.ok()) {
    out.error = sent.why();
    return false;
  }
  AnswerReader& reader = connection.reader();
  const Result<AnswerHead> answer_head = reader.read_head();
  if (!answer_head.ok()) {
    out.error = answer_head.why();
    return false;
  }
  const AnswerHead& head = *answer_head;
  const bool streamed = request.on_data != nullptr && head.status >= 200 && head.status < 300;
  // An empty piece first: the stream is open (a quiet watch sends nothing more until an event).
  if (streamed && !(*request.on_data)(std::string_view())) return false;
  const auto keep = [&](std::string_view data) {
    out.body.append(data);
    return true;
  };
  const Result<AnswerReader::BodyEnd> body = streamed ? reader.read_body(head, UINT64_MAX, *request.on_data)
                                                      : reader.read_body(head, kMaxAnswerBytes, keep);
  if (!body.ok()) {
    out.error = body.why();
    // A stream that broke mid-way keeps its status (the watch resumes from where it was); any other
    // answer cut short is no answer.
    if (streamed) out.status = head.status;
    else out.body.clear();
    return false;
  }
  out.status = head.status;  // a whole answer, or a stream its reader ended
  reusable = *body == AnswerReader::BodyEnd::kWhole && request.keep_alive && !head.server_closes && reader.buffered() == 0;
  return true;
}

ApiResponse ApiClient::pooled(const Exchange& request) const {
  ApiResponse out;
  uint64_t ca_generation = 0;
  bool reused = false, reusable = false;
  std::string token = this->token();
  std::unique_ptr<ApiConnection> connection;
  // A connection from the pool (or, `fresh`, a new one) into `connection`; false with out.error.
  const auto take_connection = [&](bool fresh) {
    Result<std::unique_ptr<ApiConnection>> got = acquire(request.timeout, ca_generation, fresh, reused);
    if (!got.ok()) {
      out.error = got.why();
      return false;
    }
    connection = std::move(got).value();
    return true;
  };
  if (!take_connection(false)) return out;
  bool answered = exchange(*connection, request, token, out, reusable);
  if (!answered && reused) {
    // A kept-alive connection the server closed while it sat idle (its keep-alive timeout can fire
    // just as a request goes out): once more on a new connection, as Go's transport retries. Every
    // call here is safe to repeat: reads, merge patches, and writes the API server refuses twice
    // (a second Binding is a 409 the binder reads, a Lease update is conditional).
    release(nullptr, ca_generation);
    if (!take_connection(true)) return out;
    answered = exchange(*connection, request, token, out, reusable);
  }
  if (answered && out.status == 401 && !endpoint_.token_file.empty()) {
    // The projected token may have rotated since it was last looked at: read the file now, and try
    // once more if it holds another token.
    if (const std::string fresh = this->token(true); fresh != token && !fresh.empty()) {
      if (!reusable) {
        release(nullptr, ca_generation);
        if (!take_connection(true)) return out;
      }
      answered = exchange(*connection, request, fresh, out, reusable);
    }
  }
  if (!answered || !reusable) connection.reset();
  release(std::move(connection), ca_generation);
  return out;
}

ApiResponse ApiClient::get(const std::string& path, std::chrono::milliseconds timeout) const {
  return pooled({"GET", "", "", &path, true, timeout, nullptr});
}

ApiResponse ApiClient::post(const std::string& path, const std::string& json, std::chrono::milliseconds timeout) const {
  return pooled({"POST", "application/json", json, &path, true, timeout, nullptr});
}

ApiResponse ApiClient::put(const std::string& path, const std::string& json, std::chrono::milliseconds timeout) const {
  return pooled({"PUT", "application/json", json, &path, true, timeout, nullptr});
}

ApiResponse ApiClient::merge_patch(const std::string& path, const std::string& json,
                                   std::chrono::milliseconds timeout) const {
  return pooled({"PATCH", "application/merge-patch+json", json, &path, true, timeout, nullptr});
}

ApiResponse ApiClient::watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                             std::chrono::milliseconds idle_timeout, std::chrono::milliseconds batch,
                             const std::function<void()>& on_open) const {
  ApiResponse out;
  Result<std::unique_ptr<ApiConnection>> made = connect();
  if (!made.ok()) {
    out.error = made.why();
    return out;
  }
  std::unique_ptr<ApiConnection> connection = std::move(made).value();
  {
    // Checked and registered under the lock cancel() takes: a watch starting while the process stops
    // either sees the cancellation here or is in the list cancel() interrupts, never neither (it would
    // hold shutdown until its idle timeout, minutes).
    std::lock_guard<std::mutex> lock(watches_mutex_);
    if (cancelled_) {
      out.error = "cancelled";
      return out;
    }
    watches_.push_back(connection.get());
  }
  std::string pending;
  bool stopped = false;  // by on_line or cancel(): what is pending is not a last line
  std::optional<std::chrono::steady_clock::time_point> last_events;  // when on_line last had lines
  const std::function<bool(std::string_view)> on_data = [&](std::string_view data) {
    if (data.empty()) {  // the server answered 2xx: the stream is open
      if (on_open) on_open();
      return !cancelled_;
    }
    pending.append(data);
    size_t start = 0;
    for (size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
      if (!on_line(std::string_view(pending).substr(start, nl - start))) {
        stopped = true;
        return false;
      }
      start = nl + 1;
    }
    pending.erase(0, start);
    if (start > 0 && batch > std::chrono::milliseconds::zero()) {
      const auto now = std::chrono::steady_clock::now();
      const bool flowing = last_events && now - *last_events < batch;
      last_events = now;
      if (flowing && !cancelled_) rest_between_batches(batch);  // the next events gather meanwhile
    }
    stopped = cancelled_;
    return !stopped;
  };
  bool reusable = false;
  const bool answered =
      exchange(*connection, {"GET", "", "", &path, false, idle_timeout, &on_data}, token(), out, reusable);
  {
    std::lock_guard<std::mutex> lock(watches_mutex_);
    watches_.erase(std::remove(watches_.begin(), watches_.end(), connection.get()), watches_.end());
  }
  if (answered && !stopped && out.ok() && !pending.empty()) on_line(pending);  // a last line without its newline
  return out;
}

void ApiClient::cancel() {
  {
    std::lock_guard<std::mutex> lock(watches_mutex_);
    cancelled_ = true;
    for (ApiConnection* connection : watches_) connection->interrupt();
  }
  hurry_watches();
}

void ApiClient::rest_between_batches(std::chrono::milliseconds batch) const {
  std::unique_lock<std::mutex> lock(rest_mutex_);
  const uint64_t generation = hurry_generation_;
  ++resting_watches_;
  rest_cv_.wait_for(lock, batch, [&] { return hurry_generation_ != generation; });
  --resting_watches_;
}

bool ApiClient::hurry_watches() const {
  std::lock_guard<std::mutex> lock(rest_mutex_);
  if (resting_watches_ == 0) return false;
  ++hurry_generation_;
  rest_cv_.notify_all();
  return true;
}

}  // namespace gpu_extender::kube
