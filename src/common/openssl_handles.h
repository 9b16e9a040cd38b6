#pragma once
// OpenSSL objects owned by unique_ptr, freed by their own free function when the owner goes: no path
// (an early return, an exception) can leak one or free it twice. Header-only; the layers that include
// it (kube, server) link OpenSSL.
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string_view>

namespace gpu_extender {

template <typename T, void (*Free)(T*)>
struct OpenSslFree {
  void operator()(T* p) const { Free(p); }
};

using BioHandle = std::unique_ptr<BIO, OpenSslFree<BIO, BIO_free_all>>;
using X509Handle = std::unique_ptr<X509, OpenSslFree<X509, X509_free>>;
using EvpKeyHandle = std::unique_ptr<EVP_PKEY, OpenSslFree<EVP_PKEY, EVP_PKEY_free>>;
using X509StoreHandle = std::unique_ptr<X509_STORE, OpenSslFree<X509_STORE, X509_STORE_free>>;
using SslContextHandle = std::unique_ptr<SSL_CTX, OpenSslFree<SSL_CTX, SSL_CTX_free>>;
using SslHandle = std::unique_ptr<SSL, OpenSslFree<SSL, SSL_free>>;
// A certificate chain: freeing it frees the certificates it holds.
inline void free_x509_stack(STACK_OF(X509) * stack) { sk_X509_pop_free(stack, X509_free); }
using X509StackHandle = std::unique_ptr<STACK_OF(X509), OpenSslFree<STACK_OF(X509), free_x509_stack>>;

// A read-only memory BIO over `bytes` (which must outlive it).
inline BioHandle memory_bio(std::string_view bytes) {
  return BioHandle(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
}

}  // namespace gpu_extender
