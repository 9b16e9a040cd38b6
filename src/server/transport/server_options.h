#pragma once
// What the HTTP transport reads of the configuration: where to listen, the limits that keep a client
// from holding a thread or memory for ever, TLS. The app builds it from the command line
// (app/cli_options.h); the transport sees nothing else of it.
#include <cstddef>
#include <string>
#include <vector>

namespace gpu_extender {

struct ServerOptions {
  std::string address = "127.0.0.1";
  int port = 8888;
  int metrics_port = 0;  // 0: /metrics only on the service port
  // A 5,000-node full-mode request is about 54 MB, 70 MB with managedFields: the largest cluster
  // Kubernetes supports fits, and one request stays far from the container's 1 GiB limit.
  size_t max_body_bytes = 96UL * 1024 * 1024;
  // Bodies in flight are charged 6 bytes a byte against this (see MemoryBudget): one largest body
  // fits (576 MiB), and with the idle workspace kept (at most two body sizes) and the rest of the
  // process, the peak stays under the shipped 1 GiB container limit.
  size_t memory_budget_bytes = 640UL * 1024 * 1024;
  int threads = 0;                   // 0: two per core, at least 4
  int max_threads = 256;             // the pool grows to this many: one thread per open connection
  int max_queued_connections = 64;   // beyond: 503 with Retry-After
  int read_timeout_seconds = 10;     // a client silent this long mid-request is cut off
  int header_timeout_seconds = 10;   // a request's headers (and a TLS handshake) within this from its first byte
  int request_timeout_seconds = 60;  // a whole request (96 MiB at 1.6 MB/s) within this from its first byte
  size_t max_header_bytes = size_t{64} * 1024;  // request line and headers; beyond: 431
  // HTTPS for the extender verbs (kube-scheduler's tlsConfig); a client CA makes it mutual TLS.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // With a client CA: the client certificate's subject CN or a DNS/URI SAN must be one of these (the
  // scheduler's); empty: any certificate the CA signed.
  std::vector<std::string> tls_client_names;
  // The admission webhook (POST /mutate-pods) on a port of its own, HTTPS with this certificate and no
  // client certificate asked (the API server shows none to webhooks); 0: not served.
  int webhook_port = 0;
  std::string webhook_tls_cert_file;
  std::string webhook_tls_key_file;
};

}  // namespace gpu_extender
