#include "server/transport/tls_certificates.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <stdexcept>

#include "common/file_text.h"

namespace gpu_extender {
namespace {

std::string read_all(const std::string& path) { return path.empty() ? "" : read_file_text(path).value_or(""); }

// TLS 1.2's suites: ECDHE (forward secrecy) with AEAD ciphers only, as Mozilla's "intermediate"
// configuration and Go's crypto/tls defaults (what kube-scheduler and the API server speak) have them.
// TLS 1.3's suites are all AEAD with ephemeral keys: OpenSSL's defaults stand.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

double unix_seconds(const ASN1_TIME* time) {
  std::tm tm{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) return 0;
  return static_cast<double>(timegm(&tm));
}

struct NameStackFree {
  void operator()(STACK_OF(X509_NAME) * names) const { sk_X509_NAME_pop_free(names, X509_NAME_free); }
};
using NameStackHandle = std::unique_ptr<STACK_OF(X509_NAME), NameStackFree>;

std::string asn1_text(const ASN1_STRING* s) {
  return s == nullptr ? "" : std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                         static_cast<size_t>(ASN1_STRING_length(s)));
}

// The names a client certificate says it is: its subject CN, and its DNS and URI SANs.
std::vector<std::string> certificate_names(X509* cert) {
  std::vector<std::string> names;
  const X509_NAME* subject = X509_get_subject_name(cert);
  for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_commonName, i))
    names.push_back(asn1_text(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i))));
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(sans, i);
    if (name->type == GEN_DNS) names.push_back(asn1_text(name->d.dNSName));
    if (name->type == GEN_URI) names.push_back(asn1_text(name->d.uniformResourceIdentifier));
  }
  GENERAL_NAMES_free(sans);
  return names;
}

}  // namespace

struct TlsCertificates::Loaded {
  X509Handle leaf;
  X509StackHandle chain{sk_X509_new_null()};
  EvpKeyHandle key;
  std::string fingerprint;
  double not_after = 0;
  // With a client CA: what verifies client certificates, and the CA names sent in the request for one.
  X509StoreHandle client_store;
  NameStackHandle client_names;
  std::optional<double> client_ca_not_after;
};

TlsCertificates::TlsCertificates(Files files) : files_(std::move(files)) {
  current_ = load();
  if (!current_)
    throw std::runtime_error("cannot serve HTTPS: --tls-cert-file " + files_.cert_file + " / --tls-key-file " +
                             files_.key_file + " could not be loaded (missing, unreadable, not PEM, or the key does not match)");
  if (!files_.client_ca_file.empty() && !current_->client_store)
    throw std::runtime_error("cannot serve HTTPS: --tls-client-ca-file " + files_.client_ca_file +
                             " could not be loaded (missing, unreadable, or no PEM certificate in it)");
  loaded_text_ = read_all(files_.cert_file) + read_all(files_.key_file) + read_all(files_.client_ca_file);
  checked_at_ = std::chrono::steady_clock::now();
}

TlsCertificates::~TlsCertificates() = default;

// Everything the files hold now, or null when the serving pair does not load. A client CA file that does
// not load leaves client_store null (the caller decides).
std::shared_ptr<const TlsCertificates::Loaded> TlsCertificates::load() const {
  const std::string cert_text = read_all(files_.cert_file), key_text = read_all(files_.key_file);
  if (cert_text.empty() || key_text.empty()) return nullptr;
  auto loaded = std::make_shared<Loaded>();
  const BioHandle cert_bio = memory_bio(cert_text);
  loaded->leaf.reset(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) sk_X509_push(loaded->chain.get(), extra);
  loaded->key.reset(PEM_read_bio_PrivateKey(memory_bio(key_text).get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!loaded->leaf || !loaded->key || X509_check_private_key(loaded->leaf.get(), loaded->key.get()) != 1) return nullptr;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  X509_digest(loaded->leaf.get(), EVP_sha256(), digest, &length);
  static const char* hex = "0123456789abcdef";
  for (unsigned int i = 0; i < length; ++i) {
    loaded->fingerprint.push_back(hex[digest[i] >> 4]);
    loaded->fingerprint.push_back(hex[digest[i] & 15]);
  }
  loaded->not_after = unix_seconds(X509_get0_notAfter(loaded->leaf.get()));
  if (files_.client_ca_file.empty()) return loaded;
  const std::string ca_text = read_all(files_.client_ca_file);
  X509StoreHandle store(X509_STORE_new());
  NameStackHandle names(sk_X509_NAME_new_null());
  const BioHandle ca_bio = memory_bio(ca_text);
  while (X509* ca = PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr)) {
    const X509Handle owned(ca);
    X509_STORE_add_cert(store.get(), ca);
    sk_X509_NAME_push(names.get(), X509_NAME_dup(X509_get_subject_name(ca)));
    const double ends = unix_seconds(X509_get0_notAfter(ca));
    loaded->client_ca_not_after = std::min(loaded->client_ca_not_after.value_or(ends), ends);
  }
  ERR_clear_error();
  if (sk_X509_NAME_num(names.get()) > 0) {
    loaded->client_store = std::move(store);
    loaded->client_names = std::move(names);
  }
  return loaded;
}

SslContextHandle TlsCertificates::make_context() {
  SslContextHandle ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx || SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx.get(), kTls12Ciphers) != 1)
    throw std::runtime_error("cannot serve HTTPS: OpenSSL could not set up a TLS context");
  uint64_t options = SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION |
                     SSL_OP_CIPHER_SERVER_PREFERENCE;
#ifdef SSL_OP_NO_CLIENT_RENEGOTIATION
  options |= SSL_OP_NO_CLIENT_RENEGOTIATION;  // OpenSSL 3: refuses a client's request outright
#endif
  SSL_CTX_set_options(ctx.get(), options);
  SSL_CTX_set_app_data(ctx.get(), this);
  SSL_CTX_set_cert_cb(ctx.get(), &TlsCertificates::on_handshake, this);
  if (!files_.client_ca_file.empty())
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, &TlsCertificates::on_verify);
  return ctx;
}

std::shared_ptr<const TlsCertificates::Loaded> TlsCertificates::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

// Before the server's flight of each handshake: the current certificate, and the current client CAs
// (the names asked for, and the store that verifies the answer).
int TlsCertificates::on_handshake(SSL* ssl, void* self_ptr) {
  auto* self = static_cast<TlsCertificates*>(self_ptr);
  self->refresh();
  const std::shared_ptr<const Loaded> loaded = self->current();
  if (SSL_use_certificate(ssl, loaded->leaf.get()) != 1 || SSL_use_PrivateKey(ssl, loaded->key.get()) != 1) return 0;
  if (sk_X509_num(loaded->chain.get()) > 0) SSL_set1_chain(ssl, loaded->chain.get());
  if (loaded->client_store) {
    if (SSL_set1_verify_cert_store(ssl, loaded->client_store.get()) != 1) return 0;
    SSL_set_client_CA_list(ssl, SSL_dup_CA_list(loaded->client_names.get()));  // takes the copy
  }
  return 1;
}

// For each certificate of a client's chain once OpenSSL has checked it: the leaf must also name one of
// the allowed clients, when some are given.
int TlsCertificates::on_verify(int preverified, X509_STORE_CTX* store) {
  if (preverified != 1 || X509_STORE_CTX_get_error_depth(store) != 0) return preverified;
  auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  const auto* self = ssl != nullptr ? static_cast<const TlsCertificates*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl))) : nullptr;
  if (self == nullptr || self->files_.client_names.empty()) return 1;
  const std::vector<std::string> names = certificate_names(X509_STORE_CTX_get_current_cert(store));
  for (const std::string& name : names)
    if (std::find(self->files_.client_names.begin(), self->files_.client_names.end(), name) != self->files_.client_names.end())
      return 1;
  spdlog::warn("TLS client refused: its certificate names {} and none of --tls-client-names",
               names.empty() ? std::string("nothing") : names.front());
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

void TlsCertificates::refresh(std::chrono::milliseconds min_interval) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (now - checked_at_ < min_interval) return;
    checked_at_ = now;
  }
  const std::string text = read_all(files_.cert_file) + read_all(files_.key_file) + read_all(files_.client_ca_file);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (text == loaded_text_) return;
  }
  auto next = load();
  std::lock_guard<std::mutex> lock(mutex_);
  loaded_text_ = text;
  if (!next || (!files_.client_ca_file.empty() && !next->client_store)) {
    spdlog::error("TLS certificate or client CA files changed but do not load (a renewal half-written?); keeping the "
                  "current ones");
    return;
  }
  current_ = std::move(next);
  spdlog::info("TLS certificate reloaded (sha256 {}{})", current_->fingerprint,
               files_.client_ca_file.empty() ? "" : "; client CA bundle " + files_.client_ca_file + " read again");
}

std::string TlsCertificates::loaded_fingerprint() const { return current()->fingerprint; }

TlsCertificates::Expiry TlsCertificates::expiry() {
  refresh();
  const std::shared_ptr<const Loaded> loaded = current();
  return {loaded->not_after, loaded->client_ca_not_after};
}

}  // namespace gpu_extender
