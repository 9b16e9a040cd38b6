#include "common/file_text.h"
#include "api_client.h"
#include "buffered_client.h"
#include "common/openssl_handles.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <thread>

namespace gpu_extender::kube {
namespace {

// An X509_STORE with every certificate of a PEM bundle (an SSL context takes it over with release()).
X509StoreHandle ca_store_from_pem(const std::string& pem) {
  X509StoreHandle store(X509_STORE_new());
  STACK_OF(X509_INFO)* infos = PEM_X509_INFO_read_bio(memory_bio(pem).get(), nullptr, nullptr, nullptr);
  int added = 0;
  if (infos) {
    for (int i = 0; i < sk_X509_INFO_num(infos); ++i) {
      X509_INFO* info = sk_X509_INFO_value(infos, i);
      if (info->x509 && X509_STORE_add_cert(store.get(), info->x509) == 1) ++added;
    }
    sk_X509_INFO_pop_free(infos, X509_INFO_free);  // a stack of owned entries: its own free walks them
  }
  if (added == 0) throw KubeConfigError("the certificate authority holds no PEM certificate");
  return store;
}

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

namespace {
// Where cpp-httplib is told to look CAs up by hash (see connect()): no such directory, so nothing is found.
constexpr const char* kNoSystemCaDirectory = "/nonexistent/gpu-extender-trusts-only-the-cluster-ca";
}  // namespace

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
  if (!tls_ && !endpoint_.client_cert_pem.empty())
    throw KubeConfigError("client certificates need an https:// API server");
  if (tls_ && !endpoint_.ca_pem.empty()) ca_store_from_pem(endpoint_.ca_pem);  // validate now
  ca_pem_ = endpoint_.ca_pem;
  if (!endpoint_.ca_file.empty()) ca_stamp_ = file_stamp(endpoint_.ca_file);
  ca_checked_at_ = std::chrono::steady_clock::now();
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
  try {
    ca_store_from_pem(*text);  // validates it
  } catch (const KubeConfigError&) {
    return ca_pem_;  // a half-written file: try again at the next change
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

std::unique_ptr<httplib::ClientImpl> ApiClient::connect(std::chrono::milliseconds read_timeout) const {
  std::unique_ptr<httplib::ClientImpl> client;
  if (tls_) {
    std::unique_ptr<httplib::SSLClient> ssl;
    if (!endpoint_.client_cert_pem.empty()) {
      const X509Handle cert(PEM_read_bio_X509(memory_bio(endpoint_.client_cert_pem).get(), nullptr, nullptr, nullptr));
      const EvpKeyHandle key(
          PEM_read_bio_PrivateKey(memory_bio(endpoint_.client_key_pem).get(), nullptr, nullptr, nullptr));
      if (!cert || !key) throw KubeConfigError("the client certificate or key is not valid PEM");
      ssl = make_buffered_tls_client(host_, port_, cert.get(), key.get());  // the context takes references
    } else {
      ssl = make_buffered_tls_client(host_, port_, nullptr, nullptr);
    }
    std::string ca;
    {
      std::lock_guard<std::mutex> lock(pool_mutex_);
      ca = current_ca_pem();
    }
    if (!ca.empty()) {
      ssl->set_ca_cert_store(ca_store_from_pem(ca).release());  // the context owns it
      // Given no CA path, cpp-httplib adds the system's whole CA bundle to the store on every new
      // connection (SSL_CTX_set_default_verify_paths: ~140 certificates parsed, ~20 ms of CPU, 19% of
      // the extender's CPU in a 500-pod burst) and so trusts public CAs for the API server too. A
      // lookup directory that holds nothing stops both: the API server is verified against its own CA.
      ssl->set_ca_cert_path("", kNoSystemCaDirectory);
    }
    ssl->enable_server_certificate_verification(!endpoint_.insecure_skip_tls_verify);
    client = std::move(ssl);
  } else {
    client = make_buffered_client(host_, port_);
  }
  client->set_connection_timeout(std::chrono::seconds(5));
  // A request leaves in one write (buffered_client.h), and must leave at once: with Nagle on, a
  // write that follows an unacknowledged one waits for the server's delayed ACK (40 ms). Go's net
  // package, on the other side, sets TCP_NODELAY too.
  client->set_tcp_nodelay(true);
  client->set_read_timeout(read_timeout);
  client->set_write_timeout(std::chrono::seconds(10));
  if (const std::string token = this->token(); !token.empty()) client->set_bearer_token_auth(token);
  return client;
}

std::unique_ptr<httplib::ClientImpl> ApiClient::acquire(std::chrono::milliseconds read_timeout,
                                                        uint64_t& ca_generation, bool fresh, bool& reused) const {
  std::unique_ptr<httplib::ClientImpl> client;
  {
    std::unique_lock<std::mutex> lock(pool_mutex_);
    (void)current_ca_pem();  // empties the pool when the CA changed
    // All connections busy: wait for one (bounded by the call's own timeout), then open one if none.
    pool_freed_.wait_for(lock, read_timeout, [this] { return !idle_.empty() || in_use_ < kMaxConnections; });
    if (!idle_.empty() && !fresh) {
      client = std::move(idle_.back());
      idle_.pop_back();
    }
    ++in_use_;
    ca_generation = ca_generation_;
  }
  reused = client != nullptr;
  if (!client) {
    try {
      client = connect(read_timeout);
    } catch (...) {
      release(nullptr, ca_generation);
      throw;
    }
    client->set_keep_alive(true);
  }
  client->set_read_timeout(read_timeout);
  // The token may have rotated since this connection was made: each call sends the current one.
  if (const std::string token = this->token(); !token.empty()) client->set_bearer_token_auth(token);
  return client;
}

void ApiClient::release(std::unique_ptr<httplib::ClientImpl> client, uint64_t ca_generation) const {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    --in_use_;
    if (client && ca_generation == ca_generation_ && idle_.size() < kMaxConnections) idle_.push_back(std::move(client));
  }
  pool_freed_.notify_one();
}

template <typename Call>
ApiResponse ApiClient::pooled(std::chrono::milliseconds timeout, const Call& call) const {
  ApiResponse out;
  uint64_t ca_generation = 0;
  bool reused = false;
  auto client = acquire(timeout, ca_generation, false, reused);
  auto res = call(*client);
  if (!res && reused) {
    // A kept-alive connection the server closed while it sat idle (its keep-alive timeout can fire
    // just as a request goes out): once more on a new connection, as Go's transport retries. Every
    // call here is safe to repeat: reads, merge patches, and writes the API server refuses twice
    // (a second Binding is a 409 the binder reads, a Lease update is conditional).
    release(nullptr, ca_generation);
    client = acquire(timeout, ca_generation, true, reused);
    res = call(*client);
  }
  if (res && res->status == 401 && !endpoint_.token_file.empty()) {
    // The projected token may have rotated since it was last looked at: read the file now, and try
    // once more if it holds another token.
    const std::string used = token();
    if (const std::string fresh = token(true); fresh != used && !fresh.empty()) {
      client->set_bearer_token_auth(fresh);
      res = call(*client);
    }
  }
  if (res) {
    out.status = res->status;
    out.body = std::move(res->body);
    // An HTTP answer leaves the connection usable, unless the server said it closes it.
    if (res->get_header_value("Connection") == "close") client.reset();
  } else {
    out.error = httplib::to_string(res.error());
    client.reset();
  }
  release(std::move(client), ca_generation);
  return out;
}

ApiResponse ApiClient::get(const std::string& path, std::chrono::milliseconds timeout) const {
  return pooled(timeout, [&](httplib::ClientImpl& client) {
    return client.Get(path.c_str(), httplib::Headers{{"Accept", "application/json"}});
  });
}

ApiResponse ApiClient::post(const std::string& path, const std::string& json, std::chrono::milliseconds timeout) const {
  return pooled(timeout, [&](httplib::ClientImpl& client) {
    return client.Post(path.c_str(), httplib::Headers{{"Accept", "application/json"}}, json, "application/json");
  });
}

ApiResponse ApiClient::put(const std::string& path, const std::string& json, std::chrono::milliseconds timeout) const {
  return pooled(timeout, [&](httplib::ClientImpl& client) {
    return client.Put(path.c_str(), httplib::Headers{{"Accept", "application/json"}}, json, "application/json");
  });
}

ApiResponse ApiClient::merge_patch(const std::string& path, const std::string& json,
                                   std::chrono::milliseconds timeout) const {
  return pooled(timeout, [&](httplib::ClientImpl& client) {
    return client.Patch(path.c_str(), httplib::Headers{{"Accept", "application/json"}}, json,
                        "application/merge-patch+json");
  });
}

ApiResponse ApiClient::watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                             std::chrono::milliseconds idle_timeout, std::chrono::milliseconds batch) const {
  ApiResponse out;
  auto client = connect(idle_timeout);
  {
    // Checked and registered under the lock cancel() takes: a watch starting while the process stops
    // either sees the cancellation here or is in the list cancel() stops, never neither (it would
    // hold shutdown until its idle timeout, minutes).
    std::lock_guard<std::mutex> lock(watches_mutex_);
    if (cancelled_) {
      out.error = "cancelled";
      return out;
    }
    watches_.push_back(client.get());
  }
  std::string pending;
  int status = 0;
  std::optional<std::chrono::steady_clock::time_point> last_events;  // when on_line last had lines
  const httplib::Headers headers{{"Accept", "application/json"}};
  auto res = client->Get(
      path.c_str(), headers,
      [&](const httplib::Response& response) {
        status = response.status;
        return true;
      },
      [&](const char* data, size_t length) {
        if (status != 200) {  // an error answer: keep its body for describe()
          out.body.append(data, length);
          return true;
        }
        pending.append(data, length);
        size_t start = 0;
        for (size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
          if (!on_line(std::string_view(pending).substr(start, nl - start))) return false;
          start = nl + 1;
        }
        pending.erase(0, start);
        if (start > 0 && batch > std::chrono::milliseconds::zero()) {
          const auto now = std::chrono::steady_clock::now();
          const bool flowing = last_events && now - *last_events < batch;
          last_events = now;
          if (flowing && !cancelled_) std::this_thread::sleep_for(batch);  // the next events gather meanwhile
        }
        return !cancelled_;
      });
  {
    std::lock_guard<std::mutex> lock(watches_mutex_);
    watches_.erase(std::remove(watches_.begin(), watches_.end(), client.get()), watches_.end());
  }
  out.status = status;
  if (!res) out.error = httplib::to_string(res.error());
  else if (!pending.empty() && status == 200) on_line(pending);  // a last line without its newline
  return out;
}

void ApiClient::cancel() {
  std::lock_guard<std::mutex> lock(watches_mutex_);
  cancelled_ = true;
  for (httplib::ClientImpl* client : watches_) client->stop();
}

}  // namespace gpu_extender::kube
