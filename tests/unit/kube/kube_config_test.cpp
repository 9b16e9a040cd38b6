#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "gpu_extender/kube/kube_config.h"

using namespace gpu_extender;

namespace {
std::string write(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/gpu-extender-kubeconfig-" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}
const std::string kCa = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
}  // namespace

TEST_CASE("kubeconfig: token and inline CA of the current context") {
  const std::string path = write("a", R"(apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: dev
  context: {cluster: dev, user: dev}
- name: prod
  context: {cluster: prod-cluster, user: admin}
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: )" + std::string("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=") + R"(
users:
- name: admin
  user:
    token: s3cr3t
)");
  const ApiEndpoint e = kubeconfig_endpoint(path);
  CHECK(e.server == "https://10.0.0.1:6443");
  CHECK(e.ca_pem == kCa);
  CHECK(e.token == "s3cr3t");
  CHECK(e.source.find("context prod") != std::string::npos);
}

TEST_CASE("kubeconfig: files relative to the kubeconfig, tokenFile, client certificate data") {
  write("ca.crt", kCa);
  const std::string dir = "/tmp/";
  const std::string ca_name = "gpu-extender-kubeconfig-" + std::to_string(getpid()) + "-ca.crt";
  const std::string path = write("b", "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                                      "clusters:\n- name: k\n  cluster: {server: 'https://k:443', certificate-authority: " + ca_name +
                                      "}\nusers:\n- name: u\n  user: {tokenFile: tok, client-certificate-data: Y2VydA==, "
                                      "client-key-data: a2V5}\n");
  const ApiEndpoint e = kubeconfig_endpoint(path);
  CHECK(e.ca_pem == kCa);
  CHECK(e.token_file == dir + "tok");
  CHECK(e.client_cert_pem == "cert");
  CHECK(e.client_key_pem == "key");
}

TEST_CASE("kubeconfig: errors name the file and what is missing") {
  CHECK_THROWS_WITH(kubeconfig_endpoint("/nonexistent/kubeconfig"), Catch::Contains("cannot read /nonexistent/kubeconfig"));
  CHECK_THROWS_WITH(kubeconfig_endpoint(write("c", "clusters: []\n")), Catch::Contains("current-context is not set"));
  CHECK_THROWS_WITH(kubeconfig_endpoint(write("d", "current-context: x\ncontexts: []\n")),
                    Catch::Contains("no context named \"x\""));
  CHECK_THROWS_WITH(kubeconfig_endpoint(write("e", "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                                                   "clusters:\n- name: k\n  cluster: {}\n")),
                    Catch::Contains("has no server"));
  CHECK_THROWS_WITH(base64_decode("a$b"), "invalid base64 data");
}

TEST_CASE("kube flags: explicit server, token file and CA, nothing configured") {
  const std::string token = write("token", "t\n");
  const std::string ca = write("ca2.crt", kCa);
  KubeFlags flags;
  flags.api_server = "https://127.0.0.1:6443";
  flags.token_file = token;
  flags.ca_file = ca;
  auto e = resolve_endpoint(flags);
  REQUIRE(e);
  CHECK(e->token_file == token);
  CHECK(e->ca_pem == kCa);
  flags.api_server = "127.0.0.1:6443";
  CHECK_THROWS_WITH(resolve_endpoint(flags), Catch::Contains("must start with https://"));
  unsetenv("KUBERNETES_SERVICE_HOST");
  CHECK_FALSE(resolve_endpoint(KubeFlags{}).has_value());
  KubeFlags orphan;
  orphan.token_file = token;
  CHECK_THROWS_WITH(resolve_endpoint(orphan), Catch::Contains("need --kube-api-server or --kubeconfig"));
}

TEST_CASE("kube flags: a token is never sent over plain http:// unless allowed") {
  const std::string token = write("token-http", "t\n");
  KubeFlags flags;
  flags.api_server = "http://127.0.0.1:8080";
  flags.token_file = token;
  CHECK_THROWS_WITH(resolve_endpoint(flags), Catch::Contains("refusing to send the bearer token to http://127.0.0.1:8080"));
  flags.allow_token_over_http = true;
  CHECK(resolve_endpoint(flags).has_value());
  KubeFlags no_token;  // nothing secret to leak: a plain local proxy (kubectl proxy) is fine
  no_token.api_server = "http://127.0.0.1:8001";
  CHECK(resolve_endpoint(no_token).has_value());
}

TEST_CASE("in-cluster: service-account files and the service environment") {
  const std::string dir = "/tmp/gpu-extender-sa-" + std::to_string(getpid());
  std::system(("mkdir -p " + dir).c_str());
  std::ofstream(dir + "/token") << "sa-token";
  std::ofstream(dir + "/ca.crt") << kCa;
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto e = in_cluster_endpoint(dir);
  unsetenv("KUBERNETES_SERVICE_HOST");
  REQUIRE(e);
  CHECK(e->server == "https://10.96.0.1:443");
  CHECK(e->token_file == dir + "/token");
  CHECK(e->ca_pem == kCa);
  CHECK_FALSE(in_cluster_endpoint(dir).has_value());
}
