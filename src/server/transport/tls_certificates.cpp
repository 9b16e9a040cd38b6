#include "common/file_text.h"
#include "server/transport/tls_certificates.h"
#include "common/openssl_handles.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace gpu_extender {
namespace {
std::string read_all(const std::string& path) { return read_file_text(path).value_or(""); }
}  // namespace

struct TlsCertificates::Pair {
  X509Handle leaf;
  X509StackHandle chain{sk_X509_new_null()};
  EvpKeyHandle key;
  std::string fingerprint;
};

TlsCertificates::TlsCertificates(std::string cert_file, std::string key_file, std::string client_ca_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)), client_ca_file_(std::move(client_ca_file)) {
  current_ = load();
  if (!current_)
    throw std::runtime_error("cannot serve HTTPS: --tls-cert-file " + cert_file_ + " / --tls-key-file " + key_file_ +
                             " could not be loaded (missing, unreadable, not PEM, or the key does not match)");
  loaded_text_ = read_all(cert_file_) + read_all(key_file_);
  checked_at_ = std::chrono::steady_clock::now();
}

std::shared_ptr<const TlsCertificates::Pair> TlsCertificates::load() const {
  const std::string cert_text = read_all(cert_file_), key_text = read_all(key_file_);
  if (cert_text.empty() || key_text.empty()) return nullptr;
  auto pair = std::make_shared<Pair>();
  const BioHandle cert_bio = memory_bio(cert_text);
  pair->leaf.reset(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) sk_X509_push(pair->chain.get(), extra);
  pair->key.reset(PEM_read_bio_PrivateKey(memory_bio(key_text).get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!pair->leaf || !pair->key || X509_check_private_key(pair->leaf.get(), pair->key.get()) != 1) return nullptr;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  X509_digest(pair->leaf.get(), EVP_sha256(), digest, &length);
  static const char* hex = "0123456789abcdef";
  for (unsigned int i = 0; i < length; ++i) {
    pair->fingerprint.push_back(hex[digest[i] >> 4]);
    pair->fingerprint.push_back(hex[digest[i] & 15]);
  }
  return pair;
}

bool TlsCertificates::configure(SSL_CTX& ctx) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  SSL_CTX_set_cert_cb(&ctx, &TlsCertificates::on_handshake, this);
  if (!client_ca_file_.empty()) {
    if (SSL_CTX_load_verify_locations(&ctx, client_ca_file_.c_str(), nullptr) != 1) return false;
    SSL_CTX_set_client_CA_list(&ctx, SSL_load_client_CA_file(client_ca_file_.c_str()));
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return true;
}

int TlsCertificates::on_handshake(SSL* ssl, void* self_ptr) {
  auto* self = static_cast<TlsCertificates*>(self_ptr);
  self->refresh();
  std::shared_ptr<const Pair> pair;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    pair = self->current_;
  }
  if (SSL_use_certificate(ssl, pair->leaf.get()) != 1 || SSL_use_PrivateKey(ssl, pair->key.get()) != 1) return 0;
  if (sk_X509_num(pair->chain.get()) > 0) SSL_set1_chain(ssl, pair->chain.get());
  return 1;
}

void TlsCertificates::refresh(std::chrono::milliseconds min_interval) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (now - checked_at_ < min_interval) return;
    checked_at_ = now;
  }
  const std::string text = read_all(cert_file_) + read_all(key_file_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (text == loaded_text_) return;
  }
  auto next = load();
  std::lock_guard<std::mutex> lock(mutex_);
  loaded_text_ = text;
  if (!next) {
    spdlog::error("TLS certificate files changed but do not load (a renewal half-written?); keeping the current one");
    return;
  }
  current_ = std::move(next);
  spdlog::info("TLS certificate reloaded (sha256 {})", current_->fingerprint);
}

std::string TlsCertificates::loaded_fingerprint() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_->fingerprint;
}

}  // namespace gpu_extender
