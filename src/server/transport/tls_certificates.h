#pragma once
// The extender's serving certificate, reloaded when its files change (cert-manager renews them in
// place), handed to each TLS handshake through OpenSSL's certificate callback so that a renewal needs
// no restart and never races a handshake in progress. TLS 1.2 is the oldest protocol accepted; with a
// client CA, clients without a certificate it signed are refused (mutual TLS).
//
// Thread-safe: handshakes on any worker read the current certificate; a reload swaps it atomically.
#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace gpu_extender {

class TlsCertificates {
 public:
  // Loads the files now; throws std::runtime_error naming what failed.
  TlsCertificates(std::string cert_file, std::string key_file, std::string client_ca_file);
  // Sets up a server SSL_CTX: protocol floor, certificate callback, client verification.
  bool configure(SSL_CTX& ctx);
  // Reloads when the files' content changed since the last look (at most every `min_interval`).
  void refresh(std::chrono::milliseconds min_interval = std::chrono::seconds(2));
  std::string loaded_fingerprint() const;  // SHA-256 of the current certificate, hex (for logs and tests)

 private:
  struct Pair;
  static int on_handshake(SSL* ssl, void* self);
  std::shared_ptr<const Pair> load() const;

  std::string cert_file_, key_file_, client_ca_file_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Pair> current_;
  std::string loaded_text_;
  std::chrono::steady_clock::time_point checked_at_{};
};

}  // namespace gpu_extender
