// The API client's transport against the fake API server (TLS, bearer token): requests written in
// one piece and answers read from a buffer (kube/http_answer.h, kube/api_connection.h) must carry bodies of any size
// both ways, keep one connection across sequential calls, and stream watches line by line.
#include <catch2/catch.hpp>

#include "api_client_support.h"
#include "extender_process.h"
#include "scheduler_driver.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

using namespace gpu_extender;
using nlohmann::json;
using test_support::FakeApiServer;

namespace {

constexpr auto kTimeout = std::chrono::seconds(10);

}  // namespace

TEST_CASE("api client: bodies larger than what it holds or reads at once arrive whole, on one connection") {
  FakeApiServer api;
  for (int i = 0; i < 300; ++i) api.put_pod(test_support::pending_pod("p-" + std::to_string(i), 1, 0));
  const auto client = test_support::api_client_for(api);
  const auto before = api.traffic();

  // A request past the 64 KiB the stream holds: a merge patch with a 200 KB annotation.
  const std::string big(size_t{200} * 1024, 'x');
  const json patch = {{"metadata", {{"annotations", {{"example.com/big", big}}}}}};
  const kube::ApiResponse patched = client->merge_patch("/api/v1/namespaces/burst/pods/p-7", patch.dump(), kTimeout);
  REQUIRE(patched.status == 200);
  CHECK(api.pod("burst", "p-7")["metadata"]["annotations"]["example.com/big"] == big);

  // An answer many times the 16 KiB read buffer: the list of 300 pods, one of them 200 KB.
  const kube::ApiResponse listed = client->get("/api/v1/pods", kTimeout);
  REQUIRE(listed.status == 200);
  const json list = json::parse(listed.body);
  CHECK(list["items"].size() == 300);
  CHECK(listed.body.size() > size_t{200} * 1024);

  // Small calls one after another: each answer read to its end, the connection kept.
  for (int i = 0; i < 50; ++i) {
    const kube::ApiResponse got = client->get("/api/v1/namespaces/burst/pods/p-" + std::to_string(i), kTimeout);
    REQUIRE(got.status == 200);
    CHECK(json::parse(got.body)["metadata"]["name"] == "p-" + std::to_string(i));
  }
  const kube::ApiResponse missing = client->get("/api/v1/namespaces/burst/pods/nobody", kTimeout);
  CHECK(missing.status == 404);
  CHECK(missing.describe().find("not found") != std::string::npos);
  CHECK(api.traffic().connections - before.connections == 1);
}

TEST_CASE("api client: a watch delivers its events line by line, however the stream splits them") {
  FakeApiServer api;
  api.put_pod(test_support::pending_pod("first", 1, 0));
  const auto client = test_support::api_client_for(api);
  const kube::ApiResponse listed = client->get("/api/v1/pods", kTimeout);
  REQUIRE(listed.status == 200);
  const std::string version = json::parse(listed.body)["metadata"]["resourceVersion"];
  std::thread writer([&] {
    for (int i = 0; i < 20; ++i) api.put_pod(test_support::pending_pod("w-" + std::to_string(i), 1, 0));
  });
  std::vector<std::string> names;
  bool parsed_all = true;
  const kube::ApiResponse watched = client->watch(
      "/api/v1/pods?watch=true&resourceVersion=" + version,
      [&](std::string_view line) {
        const json event = json::parse(line, nullptr, false);
        parsed_all = parsed_all && !event.is_discarded();
        if (!event.is_discarded()) names.push_back(event["object"]["metadata"]["name"]);
        return names.size() < 20;
      },
      kTimeout);
  writer.join();
  CHECK(parsed_all);
  REQUIRE(names.size() == 20);
  for (int i = 0; i < 20; ++i) CHECK(names[static_cast<size_t>(i)] == "w-" + std::to_string(i));
}

TEST_CASE("api client: a watch read in batches delivers every event in order, and stops when cancelled") {
  FakeApiServer api;
  const auto client = test_support::api_client_for(api);
  const kube::ApiResponse listed = client->get("/api/v1/pods", kTimeout);
  REQUIRE(listed.status == 200);
  const std::string version = json::parse(listed.body)["metadata"]["resourceVersion"];
  // Events a few milliseconds apart: the stream is read once per batch, the events written while it
  // waited arrive with the next read.
  std::thread writer([&] {
    for (int i = 0; i < 60; ++i) {
      api.put_pod(test_support::pending_pod("b-" + std::to_string(i), 1, 0));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::string> names;
  std::atomic<bool> cancelled{false};
  std::thread canceller;
  const kube::ApiResponse watched = client->watch(
      "/api/v1/pods?watch=true&resourceVersion=" + version,
      [&](std::string_view line) {
        const json event = json::parse(line, nullptr, false);
        if (!event.is_discarded()) names.push_back(event["object"]["metadata"]["name"]);
        if (names.size() == 60 && !cancelled.exchange(true)) {
          // Cancelled from elsewhere while the stream waits for its next batch: the watch ends.
          canceller = std::thread([&] { client->cancel(); });
        }
        return true;
      },
      kTimeout, std::chrono::milliseconds(50));
  writer.join();
  if (canceller.joinable()) canceller.join();
  REQUIRE(names.size() == 60);
  for (int i = 0; i < 60; ++i) CHECK(names[static_cast<size_t>(i)] == "b-" + std::to_string(i));
  CHECK(cancelled);
}

TEST_CASE("api client: a token file rotated within the second it is not looked at is read again after a 401") {
  FakeApiServer api;
  api.put_pod(test_support::pending_pod("p-0", 1, 0));
  char dir_template[] = "/tmp/gpu-extender-token-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string token_file = dir + "/token";
  std::ofstream(token_file) << "test-token\n";
  ApiEndpoint endpoint;
  endpoint.server = api.url();
  endpoint.token_file = token_file;
  endpoint.ca_pem = test_support::read_file(test_support::TestCertificate::get().cert_file);
  const kube::ApiClient client(endpoint);
  REQUIRE(client.get("/api/v1/namespaces/burst/pods/p-0", kTimeout).status == 200);

  // Rotated at once: the client looks at the file at most once a second, so its next call carries
  // the old token, is refused, and is made again with the new one.
  std::ofstream(token_file) << "rotated-token\n";
  api.accept_tokens({"rotated-token"});
  CHECK(client.get("/api/v1/namespaces/burst/pods/p-0", kTimeout).status == 200);
  const std::vector<std::string> seen = api.seen_tokens();
  REQUIRE(seen.size() >= 3);
  CHECK(seen[seen.size() - 2] == "test-token");
  CHECK(seen.back() == "rotated-token");
  std::remove(token_file.c_str());
  rmdir(dir.c_str());
}

namespace {

// A self-signed certificate (its own CA) for `san`, in a directory removed with it.
struct OtherCertificate {
  explicit OtherCertificate(const std::string& san) {
    char tmpl[] = "/tmp/gpu-extender-other-cert-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other -addext subjectAltName=" +
                            san + " -keyout " + dir + "/tls.key -out " + dir + "/tls.crt >/dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  ~OtherCertificate() {
    std::remove((dir + "/tls.key").c_str());
    std::remove((dir + "/tls.crt").c_str());
    rmdir(dir.c_str());
  }
  std::string dir;
};

gpu_extender::ApiEndpoint endpoint_at(int port, const std::string& ca_file) {
  gpu_extender::ApiEndpoint endpoint;
  endpoint.server = "https://127.0.0.1:" + std::to_string(port);
  endpoint.ca_pem = test_support::read_file(ca_file);
  return endpoint;
}

}  // namespace

// The extender's own HTTPS port stands in for an API server here: it serves any certificate given,
// and asks for client certificates with --tls-client-ca-file.
TEST_CASE("api client: the API server's certificate must chain to the CA and name the host, and a client certificate is presented") {
  const auto& cert = test_support::TestCertificate::get();  // SANs: IP 127.0.0.1, DNS localhost
  test_support::ExtenderProcess server({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file});
  CHECK(kube::ApiClient(endpoint_at(server.port(), cert.cert_file)).get("/healthz", kTimeout).status == 200);
  gpu_extender::ApiEndpoint by_name = endpoint_at(server.port(), cert.cert_file);
  by_name.server = "https://localhost:" + std::to_string(server.port());
  CHECK(kube::ApiClient(by_name).get("/healthz", kTimeout).status == 200);

  // Another CA: refused, and said why.
  const OtherCertificate other("DNS:other.example");
  const kube::ApiResponse untrusted = kube::ApiClient(endpoint_at(server.port(), other.dir + "/tls.crt")).get("/healthz", kTimeout);
  CHECK(untrusted.status == 0);
  CHECK_THAT(untrusted.error, Catch::Contains("certificate verification"));
  gpu_extender::ApiEndpoint insecure = endpoint_at(server.port(), other.dir + "/tls.crt");
  insecure.insecure_skip_tls_verify = true;
  CHECK(kube::ApiClient(insecure).get("/healthz", kTimeout).status == 200);

  // A trusted certificate for another name: refused.
  test_support::ExtenderProcess misnamed({"--tls-cert-file", other.dir + "/tls.crt", "--tls-key-file", other.dir + "/tls.key"});
  const kube::ApiResponse wrong_host = kube::ApiClient(endpoint_at(misnamed.port(), other.dir + "/tls.crt")).get("/healthz", kTimeout);
  CHECK(wrong_host.status == 0);
  CHECK_THAT(wrong_host.error, Catch::Contains("certificate verification"));

  // A server that asks for a client certificate: answered with one, refused without.
  test_support::ExtenderProcess mutual({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file,
                                        "--tls-client-ca-file", cert.cert_file});
  CHECK(kube::ApiClient(endpoint_at(mutual.port(), cert.cert_file)).get("/healthz", kTimeout).status == 0);
  gpu_extender::ApiEndpoint with_cert = endpoint_at(mutual.port(), cert.cert_file);
  with_cert.client_cert_pem = test_support::read_file(cert.cert_file);
  with_cert.client_key_pem = test_support::read_file(cert.key_file);
  CHECK(kube::ApiClient(with_cert).get("/healthz", kTimeout).status == 200);
  // A key that is not the certificate's is refused when the client is made, not at the first call.
  with_cert.client_key_pem = test_support::read_file(other.dir + "/tls.key");
  CHECK_THROWS_AS(kube::ApiClient(with_cert), gpu_extender::KubeConfigError);
}
