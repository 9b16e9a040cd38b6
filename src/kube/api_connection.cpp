#include "api_connection.h"

#include "common/socket_calls.h"
#include "gpu_extender/kube/kube_config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gpu_extender::kube {
namespace {

constexpr std::chrono::seconds kSendTimeout{10};

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

// OpenSSL's queued errors as one line (and the queue emptied), or `fallback` when there are none.
std::string tls_errors(const char* fallback) {
  std::string out;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out.empty() ? fallback : out;
}

bool is_ip_literal(const std::string& host) {
  in6_addr address{};
  return inet_pton(AF_INET, host.c_str(), &address) == 1 || inet_pton(AF_INET6, host.c_str(), &address) == 1;
}

// A TCP connection to host:port within `timeout`, made blocking: its socket.
Result<int> connect_tcp(const std::string& host, int port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return Status::failed("cannot resolve " + host + ": " + gai_strerror(rc));
  int fd = -1;
  std::string error = "no address for " + host;  // or why the last address failed
  for (const addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      const int ready = wait_for_socket(fd, POLLOUT, static_cast<int>(timeout.count()));
      int so_error = 0;
      socklen_t length = sizeof so_error;
      if (ready > 0 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length) == 0 && so_error == 0) rc = 0;
      else errno = ready == 0 ? ETIMEDOUT : so_error != 0 ? so_error : errno;
    }
    if (rc != 0) {
      error = "cannot connect to ";
      error.append(host).append(":").append(service).append(": ").append(std::strerror(errno));
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return Status::failed(std::move(error));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // A request leaves in one send and must leave at once: with Nagle on, a send that follows an
  // unacknowledged one waits for the server's delayed ACK (40 ms). Go's side sets TCP_NODELAY too.
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  set_socket_timeout(fd, SO_SNDTIMEO, kSendTimeout);
  return fd;
}

}  // namespace

SslContextHandle make_api_tls_context(const std::string& ca_pem, bool verify, const std::string& client_cert_pem,
                                      const std::string& client_key_pem) {
  SslContextHandle ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) throw KubeConfigError("cannot make a TLS context: " + tls_errors("out of memory"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_read_ahead(ctx.get(), 1);
  if (!ca_pem.empty()) {
    SSL_CTX_set_cert_store(ctx.get(), ca_store_from_pem(ca_pem).release());  // the context owns it
  } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
    throw KubeConfigError("cannot load the system's certificate authorities: " + tls_errors("unknown error"));
  }
  SSL_CTX_set_verify(ctx.get(), verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  if (!client_cert_pem.empty() || !client_key_pem.empty()) {
    const X509Handle cert(PEM_read_bio_X509(memory_bio(client_cert_pem).get(), nullptr, nullptr, nullptr));
    const EvpKeyHandle key(PEM_read_bio_PrivateKey(memory_bio(client_key_pem).get(), nullptr, nullptr, nullptr));
    if (!cert || !key || SSL_CTX_use_certificate(ctx.get(), cert.get()) != 1 ||
        SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 || SSL_CTX_check_private_key(ctx.get()) != 1)
      throw KubeConfigError("the client certificate or key is not valid PEM, or they do not match: " +
                            tls_errors("unreadable"));
  }
  ERR_clear_error();
  return ctx;
}

Result<std::unique_ptr<ApiConnection>> ApiConnection::open(const std::string& host, int port, SSL_CTX* tls,
                                                           std::chrono::milliseconds connect_timeout) {
  const Result<int> socket = connect_tcp(host, port, connect_timeout);
  if (!socket.ok()) return socket.status();
  const int fd = *socket;
  if (tls == nullptr) return std::unique_ptr<ApiConnection>(new ApiConnection(fd, nullptr));
  SslHandle ssl(SSL_new(tls));
  if (!ssl || SSL_set_fd(ssl.get(), fd) != 1) {
    ::close(fd);
    return Status::failed("cannot start TLS: " + tls_errors("out of memory"));
  }
  const bool address = is_ip_literal(host);
  if (SSL_CTX_get_verify_mode(tls) != SSL_VERIFY_NONE) {
    // The certificate must name the host we dialled: an IP address in its IP SANs, a DNS name in its
    // DNS SANs (or its common name when it has none).
    const bool ok = address ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), host.c_str()) == 1
                            : SSL_set1_host(ssl.get(), host.c_str()) == 1;
    if (!ok) {
      ::close(fd);
      return Status::failed("cannot verify TLS for host " + host);
    }
  }
  if (!address) SSL_set_tlsext_host_name(ssl.get(), host.c_str());  // SNI names hosts, not addresses
  set_socket_timeout(fd, SO_RCVTIMEO, connect_timeout);  // the handshake's reads
  ERR_clear_error();
  if (SSL_connect(ssl.get()) != 1) {
    const long verified = SSL_get_verify_result(ssl.get());
    std::string why = "TLS handshake with " + host + ":" + std::to_string(port) + " failed: " +
                      (verified != X509_V_OK
                           ? std::string("certificate verification: ") + X509_verify_cert_error_string(verified)
                           : tls_errors(errno != 0 ? std::strerror(errno) : "the server closed the connection"));
    ::close(fd);
    return Status::failed(std::move(why));
  }
  auto connection = std::unique_ptr<ApiConnection>(new ApiConnection(fd, std::move(ssl)));
  connection->read_timeout_ = connect_timeout;
  return connection;
}

ApiConnection::ApiConnection(int fd, SslHandle ssl) : fd_(fd), ssl_(std::move(ssl)) {}

ApiConnection::~ApiConnection() {
  if (ssl_) {
    // close_notify, unless the connection is already broken; never wait for the server's reply.
    if ((SSL_get_shutdown(ssl_.get()) & SSL_SENT_SHUTDOWN) == 0) {
      set_socket_timeout(fd_, SO_SNDTIMEO, std::chrono::milliseconds(100));
      SSL_shutdown(ssl_.get());
    }
    ssl_.reset();
    ERR_clear_error();
  }
  ::close(fd_);
}

void ApiConnection::set_read_timeout(std::chrono::milliseconds timeout) {
  if (timeout == read_timeout_) return;
  set_socket_timeout(fd_, SO_RCVTIMEO, timeout);
  read_timeout_ = timeout;
}

Status ApiConnection::send(std::string_view bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const size_t chunk = std::min<size_t>(bytes.size() - sent, size_t{1} << 30);
    ssize_t n = -1;
    errno = 0;
    if (ssl_) {
      n = SSL_write(ssl_.get(), bytes.data() + sent, static_cast<int>(chunk));
      if (n <= 0) {
        // A failed write leaves the TLS session unusable: no close_notify on it.
        SSL_set_shutdown(ssl_.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
        return Status::failed(errno == EAGAIN || errno == EWOULDBLOCK
                                  ? "sending the request timed out"
                                  : "sending the request failed: " + tls_errors(std::strerror(errno)));
      }
    } else {
      do {
        n = ::send(fd_, bytes.data() + sent, chunk, MSG_NOSIGNAL);
      } while (n < 0 && errno == EINTR);
      if (n <= 0)
        return Status::failed(errno == EAGAIN || errno == EWOULDBLOCK
                                  ? "sending the request timed out"
                                  : std::string("sending the request failed: ") + std::strerror(errno));
    }
    sent += static_cast<size_t>(n);
  }
  return Status::done();
}

Result<size_t> ApiConnection::read_some(char* out, size_t size) {
  const auto timed_out = [&] {
    return Status::failed("no answer within " + std::to_string(read_timeout_.count()) + " ms");
  };
  if (!ssl_) {
    ssize_t n = -1;
    do {
      n = ::recv(fd_, out, size, 0);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK) return timed_out();
    return Status::failed(std::string("reading the answer failed: ") + std::strerror(errno));
  }
  // A TLS read can end without data (a session ticket ahead of the data, an interrupted read): read
  // again, a bounded number of times.
  for (int attempt = 0; attempt < 100; ++attempt) {
    errno = 0;
    const int n = SSL_read(ssl_.get(), out, static_cast<int>(std::min<size_t>(size, INT32_MAX)));
    if (n > 0) return static_cast<size_t>(n);
    const int code = SSL_get_error(ssl_.get(), n);
    if (code == SSL_ERROR_ZERO_RETURN) return size_t{0};  // close_notify
    if (code == SSL_ERROR_WANT_READ && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SSL_set_shutdown(ssl_.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
      return timed_out();
    }
    if (code == SSL_ERROR_WANT_READ || (code == SSL_ERROR_SYSCALL && errno == EINTR)) continue;
    SSL_set_shutdown(ssl_.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    if (code == SSL_ERROR_SYSCALL && errno == 0) return size_t{0};  // closed without close_notify
    return Status::failed("reading the answer failed: " + tls_errors(errno != 0 ? std::strerror(errno) : "TLS error"));
  }
  return Status::failed("reading the answer failed: no data after repeated TLS reads");
}

bool ApiConnection::still_open() {
  if (reader_.buffered() > 0) return false;  // bytes nobody asked for: not a connection to reuse
  if (ssl_ && SSL_has_pending(ssl_.get()) == 1) return false;
  const int ready = wait_for_socket(fd_, POLLIN, 0);
  if (ready == 0) return true;  // nothing to read: open and quiet
  // Readable while idle: the server closed it (or sent a TLS alert or ticket); either way, not reused.
  return false;
}

void ApiConnection::interrupt() { ::shutdown(fd_, SHUT_RDWR); }

}  // namespace gpu_extender::kube
