#include "common/file_text.h"
#include "gpu_extender/kube/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>

namespace gpu_extender {
namespace {

std::string read_text(const std::string& path, const std::string& what) {
  std::optional<std::string> text = read_file_text(path);
  if (!text) throw KubeConfigError(what + ": cannot read " + path);
  return std::move(*text);
}

std::string relative_to(const std::string& base_file, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  const size_t slash = base_file.find_last_of('/');
  return slash == std::string::npos ? path : base_file.substr(0, slash + 1) + path;
}

// Finds the entry named `name` in a kubeconfig list (clusters, users, contexts) and returns its body.
YAML::Node named(const YAML::Node& list, const std::string& key, const std::string& name, const std::string& file) {
  if (list && list.IsSequence())
    for (const auto& item : list)
      if (item["name"] && item["name"].as<std::string>() == name && item[key]) return item[key];
  throw KubeConfigError(file + ": no " + key + " named \"" + name + "\"");
}

std::string scalar(const YAML::Node& node, const char* key) {
  return node[key] && node[key].IsScalar() ? node[key].Scalar() : std::string();
}

}  // namespace

std::string base64_decode(const std::string& text) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
    const size_t value = kAlphabet.find(c);
    if (value == std::string::npos) throw KubeConfigError("invalid base64 data");
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

std::optional<ApiEndpoint> in_cluster_endpoint(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host) return std::nullopt;
  ApiEndpoint e;
  const std::string h = host;
  e.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  e.token_file = sa_dir + "/token";
  e.ca_file = sa_dir + "/ca.crt";
  e.ca_pem = read_text(e.ca_file, "in-cluster configuration");
  (void)read_text(e.token_file, "in-cluster configuration");  // must exist now; re-read on every change
  e.source = "in-cluster (" + e.server + ")";
  return e;
}

ApiEndpoint kubeconfig_endpoint(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(read_text(path, "--kubeconfig"));
  } catch (const YAML::Exception& e) {
    throw KubeConfigError(path + ": not valid YAML: " + e.msg);
  }
  const std::string context_name = scalar(root, "current-context");
  if (context_name.empty()) throw KubeConfigError(path + ": current-context is not set");
  const YAML::Node context = named(root["contexts"], "context", context_name, path);
  const YAML::Node cluster = named(root["clusters"], "cluster", scalar(context, "cluster"), path);
  const YAML::Node user = context["user"] ? named(root["users"], "user", scalar(context, "user"), path) : YAML::Node();

  ApiEndpoint e;
  e.server = scalar(cluster, "server");
  if (e.server.empty()) throw KubeConfigError(path + ": cluster \"" + scalar(context, "cluster") + "\" has no server");
  e.insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>();
  // Each credential comes as inline base64 (*-data) or as a file path.
  auto pem = [&](const YAML::Node& node, const char* data_key, const char* file_key) -> std::string {
    if (!node) return {};
    if (const std::string data = scalar(node, data_key); !data.empty()) return base64_decode(data);
    if (const std::string file = scalar(node, file_key); !file.empty())
      return read_text(relative_to(path, file), path + ": " + file_key);
    return {};
  };
  e.ca_pem = pem(cluster, "certificate-authority-data", "certificate-authority");
  e.client_cert_pem = pem(user, "client-certificate-data", "client-certificate");
  e.client_key_pem = pem(user, "client-key-data", "client-key");
  if (user) {
    e.token = scalar(user, "token");
    if (const std::string file = scalar(user, "tokenFile"); !file.empty()) e.token_file = relative_to(path, file);
  }
  if (e.client_cert_pem.empty() != e.client_key_pem.empty())
    throw KubeConfigError(path + ": user has a client certificate without a key, or a key without a certificate");
  e.source = "kubeconfig " + path + " (context " + context_name + ", " + e.server + ")";
  return e;
}

std::optional<ApiEndpoint> resolve_endpoint(const KubeFlags& flags) {
  std::optional<ApiEndpoint> e;
  if (!flags.kubeconfig.empty()) {
    e = kubeconfig_endpoint(flags.kubeconfig);
  } else if (!flags.api_server.empty()) {
    e = ApiEndpoint{};
    e->server = flags.api_server;
    e->source = "flags (" + flags.api_server + ")";
  } else {
    e = in_cluster_endpoint();
  }
  if (!e) {
    if (!flags.token_file.empty() || !flags.ca_file.empty())
      throw KubeConfigError("--kube-token-file and --kube-ca-file need --kube-api-server or --kubeconfig");
    return std::nullopt;
  }
  // Explicit flags override what the kubeconfig or the pod says.
  if (!flags.token_file.empty()) {
    (void)read_text(flags.token_file, "--kube-token-file");
    e->token_file = flags.token_file;
    e->token.clear();
  }
  if (!flags.ca_file.empty()) {
    e->ca_file = flags.ca_file;
    e->ca_pem = read_text(flags.ca_file, "--kube-ca-file");
  }
  if (flags.insecure_skip_tls_verify) e->insecure_skip_tls_verify = true;
  if (e->server.rfind("https://", 0) != 0 && e->server.rfind("http://", 0) != 0)
    throw KubeConfigError("API server \"" + e->server + "\" must start with https:// or http://");
  const bool has_token = !e->token.empty() || !e->token_file.empty();
  if (has_token && e->server.rfind("http://", 0) == 0 && !flags.allow_token_over_http)
    throw KubeConfigError("refusing to send the bearer token to " + e->server +
                          ": over plain http:// anyone on the path can read it and act as the extender (bind any "
                          "pod); use https://, or --kube-allow-token-over-http for a test server on loopback");
  return e;
}

}  // namespace gpu_extender
