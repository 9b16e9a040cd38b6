#pragma once
// One TLS listener's identity and trust, and its TLS policy.
//
// The serving certificate and the client CA bundle are reloaded when their files change (cert-manager
// renews them in place; a CA rotates the same way), handed to each handshake through OpenSSL's
// certificate callback, so that a renewal needs no restart and never races a handshake in progress.
//
// The policy, the same on every TLS listener: TLS 1.2 or 1.3 (1.3 when the client has it: OpenSSL
// takes the highest both speak), and on 1.2 only ECDHE key exchange with AEAD ciphers (no static RSA,
// no CBC, no SHA-1 MACs); no renegotiation (a client could start one per request: CPU for nothing, and
// the attacks it has carried), no compression. With a client CA, clients without a certificate it
// signed are refused (mutual TLS); with allowed client names as well, so is every certificate of that
// CA whose subject CN and SANs (DNS, URI) name none of them: a shared issuer signs other workloads'
// certificates too, and they must not call /bind.
//
// Thread-safe: handshakes on any worker read the current files; a reload swaps them atomically.
#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/openssl_handles.h"

namespace gpu_extender {

class TlsCertificates {
 public:
  struct Files {
    std::string cert_file, key_file;
    std::string client_ca_file;             // "" : no client certificate asked
    std::vector<std::string> client_names;  // empty: any certificate the client CA signed
  };
  // Loads the files now; throws std::runtime_error naming what failed.
  explicit TlsCertificates(Files files);
  ~TlsCertificates();
  // A server SSL_CTX with the policy, the certificate callback and client verification; throws
  // std::runtime_error when OpenSSL cannot make one.
  SslContextHandle make_context();
  // Reloads what changed since the last look (at most every `min_interval`).
  void refresh(std::chrono::milliseconds min_interval = std::chrono::seconds(2));
  std::string loaded_fingerprint() const;  // SHA-256 of the current certificate, hex (for logs and tests)

  // When the serving certificate, and the earliest-expiring certificate of the client CA bundle (if
  // any), stop being valid: Unix seconds, for the expiry metric. Looks for renewed files first, so that
  // a scrape sees a renewal even while no client connects.
  struct Expiry {
    double serving = 0;
    std::optional<double> client_ca;
  };
  Expiry expiry();

 private:
  struct Loaded;
  static int on_handshake(SSL* ssl, void* self);
  static int on_verify(int preverified, X509_STORE_CTX* store);
  std::shared_ptr<const Loaded> load() const;
  std::shared_ptr<const Loaded> current() const;

  const Files files_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Loaded> current_;
  std::string loaded_text_;
  std::chrono::steady_clock::time_point checked_at_{};
};

}  // namespace gpu_extender
