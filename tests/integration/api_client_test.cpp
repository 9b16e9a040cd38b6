// The API client's transport against the fake API server (TLS, bearer token): requests written in
// one piece and answers read from a buffer (kube/buffered_client->h) must carry bodies of any size
// both ways, keep one connection across sequential calls, and stream watches line by line.
#include <catch2/catch.hpp>

#include "api_client_support.h"
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

TEST_CASE("api client: a watch delivers its events line by line through the buffered stream") {
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
