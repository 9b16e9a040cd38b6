#pragma once
// A raw client connection over TLS, for the HTTPS ports what RawConnection is for the plain ones: requests
// no HTTP library would send (a declared body never sent, a chunked body streamed until the server stops
// reading), written byte for byte after the handshake. The server's certificate is not verified: these
// tests are about what the server does with the bytes, and tls_test checks the certificates.
#include <openssl/ssl.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "raw_connection.h"

namespace test_support {

class TlsConnection {
 public:
  explicit TlsConnection(int port) : context_(SSL_CTX_new(TLS_client_method())) {
    // SSL_write has no MSG_NOSIGNAL: a write after the server closed must fail, not kill the test.
    signal(SIGPIPE, SIG_IGN);
    fd_ = connect_loopback(port);
    ssl_ = SSL_new(context_);
    SSL_set_fd(ssl_, fd_);
    REQUIRE(SSL_connect(ssl_) == 1);
  }
  ~TlsConnection() {
    SSL_free(ssl_);
    SSL_CTX_free(context_);
    close(fd_);
  }
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  bool send_all(const std::string& data) {
    for (size_t sent = 0; sent < data.size();) {
      const int n = SSL_write(ssl_, data.data() + sent, static_cast<int>(data.size() - sent));
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Everything the server sends until it closes the connection (or the receive timeout).
  std::string read_until_close() {
    std::string answer;
    char buf[4096];
    int n;
    while ((n = SSL_read(ssl_, buf, sizeof buf)) > 0) answer.append(buf, static_cast<size_t>(n));
    return answer;
  }

 private:
  SSL_CTX* context_;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
};

}  // namespace test_support
