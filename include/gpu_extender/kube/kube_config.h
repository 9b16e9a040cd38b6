#pragma once
// Where the Kubernetes API server is and how to authenticate to it, from the three places a user has
// it: in-cluster (service-account files), a kubeconfig file, or explicit flags.
// Thread-safe: plain data and pure loaders.
#include <optional>
#include <stdexcept>
#include <string>

namespace gpu_extender {

class KubeConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ApiEndpoint {
  std::string server;      // https://host:port (or http:// for a plain test server)
  std::string ca_pem;      // certificate authority, PEM (empty: system roots)
  std::string ca_file;     // where ca_pem came from, if a file: re-read when it changes (CA rotation)
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;       // a static bearer token...
  std::string token_file;  // ...or a file re-read when it changes (projected tokens rotate)
  bool insecure_skip_tls_verify = false;
  std::string source;      // "in-cluster", "kubeconfig FILE (context X)", "flags"
};

struct KubeFlags {
  std::string kubeconfig;
  std::string api_server;
  std::string token_file;
  std::string ca_file;
  bool insecure_skip_tls_verify = false;
  bool allow_token_over_http = false;  // else a token with an http:// server is refused
};

// The in-cluster service-account files (KUBERNETES_SERVICE_HOST/PORT, token, ca.crt under
// `sa_dir`), or nullopt when not in a pod.
std::optional<ApiEndpoint> in_cluster_endpoint(const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");
// A kubeconfig file: current-context's cluster and user. Relative paths are relative to the file.
ApiEndpoint kubeconfig_endpoint(const std::string& path);
// Resolves the endpoint from flags: --kubeconfig, then --kube-api-server (with --kube-token-file and
// --kube-ca-file), then in-cluster. nullopt: no API configured. Throws KubeConfigError.
std::optional<ApiEndpoint> resolve_endpoint(const KubeFlags& flags);

// Decodes standard base64 (kubeconfig's *-data fields). Throws KubeConfigError on bad input.
std::string base64_decode(const std::string& text);

}  // namespace gpu_extender
