#pragma once
// One connection to the API server, plain TCP or TLS, opened and used here: the bytes of requests
// and answers (http_answer.h) go over it with one send a request and reads into the answer reader's
// buffer.
//
// Timeouts are the socket's own (SO_RCVTIMEO, SO_SNDTIMEO on a blocking socket): a read or a send is
// itself the bounded wait, with no poll() before it. A TLS connection verifies the server's
// certificate chain against the context's CAs and its name (DNS name or IP address) during the
// handshake, as OpenSSL checks them (subjectAltName, then the common name when there is no DNS name).
//
// The process must ignore SIGPIPE (main.cpp does): OpenSSL writes to its socket with write().
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/openssl_handles.h"
#include "http_answer.h"

namespace gpu_extender::kube {

// The client side of TLS to the API server: trusts the CAs of `ca_pem` (the system's when it is
// empty), verifies the server unless `verify` is false, presents the client certificate and key when
// both are given, reads ahead (a record's header, its body and what follows in one read()). Shared
// by every connection made while the CA stays the same. Throws KubeConfigError on bad PEM.
SslContextHandle make_api_tls_context(const std::string& ca_pem, bool verify, const std::string& client_cert_pem,
                                      const std::string& client_key_pem);

class ApiConnection final : public ByteSource {
 public:
  // A connection to host:port, TLS with `tls` when it is not null; fails, saying why, when it cannot be
  // made within `connect_timeout` (the TCP connect and the TLS handshake each).
  static Result<std::unique_ptr<ApiConnection>> open(const std::string& host, int port, SSL_CTX* tls,
                                                     std::chrono::milliseconds connect_timeout);
  ~ApiConnection() override;
  ApiConnection(const ApiConnection&) = delete;
  ApiConnection& operator=(const ApiConnection&) = delete;

  // Sends all of `bytes` (one TLS record up to 16 KiB); fails on an error or a timeout.
  Status send(std::string_view bytes);
  Result<size_t> read_some(char* out, size_t size) override;
  AnswerReader& reader() { return reader_; }

  // Each read waits at most this long (a setsockopt only when it changes); sends wait at most 10 s.
  void set_read_timeout(std::chrono::milliseconds timeout);
  // Whether a kept-alive connection idle for a while is still open (the server may have closed it):
  // a poll() and a peek, for connections idle long enough for that to be likely.
  bool still_open();
  // Makes a read or send in progress in another thread return now (a watch's cancellation): shuts
  // the socket down; the owner still destroys the connection, after the caller is done with it.
  void interrupt();

  std::chrono::steady_clock::time_point last_used{};

 private:
  ApiConnection(int fd, SslHandle ssl);

  int fd_;
  SslHandle ssl_;
  std::chrono::milliseconds read_timeout_{-1};
  AnswerReader reader_{*this};
};

}  // namespace gpu_extender::kube
