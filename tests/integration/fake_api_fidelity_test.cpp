// The fake API server answers as kube-apiserver does where the extender could tell the difference, and
// the extender copes with each of those answers: watches from a compacted version, bookmarks, field
// selectors that objects start and stop matching, lists that cross pages, Bindings, Leases, and watch
// lines that arrive in pieces.
#include <atomic>
#include <future>
#include <stdexcept>
#include <catch2/catch.hpp>
#include <sstream>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"

using nlohmann::json;
using test_support::eventually;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;
using test_support::make_node;
using test_support::make_pod;

namespace {

// A client of the fake, as the extender is: TLS with the test CA, the test token.
std::unique_ptr<httplib::SSLClient> api_client(FakeApiServer& api) {
  auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", api.port());
  client->set_ca_cert_path(test_support::TestCertificate::get().cert_file.c_str());
  client->enable_server_certificate_verification(true);
  client->set_bearer_token_auth("test-token");
  client->set_read_timeout(std::chrono::seconds(10));
  return client;
}

// The events of a watch that the server ends within `seconds` (timeoutSeconds), one JSON per line.
// Throws when the watch is not answered with a 200 (no Catch assertion: it may run on another thread).
std::vector<json> watch_events(FakeApiServer& api, const std::string& query, int seconds = 1) {
  auto client = api_client(api);
  auto res = client->Get(("/api/v1/pods?watch=1&timeoutSeconds=" + std::to_string(seconds) + "&" + query).c_str());
  if (!res || res->status != 200)
    throw std::runtime_error("watch " + query + ": " + (res ? "HTTP " + std::to_string(res->status) : "no answer"));
  std::vector<json> events;
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) events.push_back(json::parse(line));
  return events;
}

json post_filter(ExtenderProcess& p, const json& body) {
  httplib::Client client("127.0.0.1", p.port());
  client.set_read_timeout(std::chrono::seconds(20));
  auto res = client.Post("/filter", body.dump(), "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return json::parse(res->body);
}

json one_gpu_pod(const std::string& name) {
  json pod = make_pod("ml", name, "uid-" + name, "", 1, 0, "Pending");
  pod["metadata"]["annotations"] = {{"gpu.nvidia.com/model", "A100"}};
  return pod;
}

// The names /filter passes for a 1-GPU pod over `nodes`.
std::vector<std::string> passing(ExtenderProcess& p, const std::vector<std::string>& nodes) {
  const json out = post_filter(p, {{"Pod", one_gpu_pod("probe")}, {"Nodes", nullptr}, {"NodeNames", nodes}});
  return out["NodeNames"].is_array() ? out["NodeNames"].get<std::vector<std::string>>() : std::vector<std::string>{};
}

std::vector<std::string> extender_args(FakeApiServer& api) { return api.extender_args(); }

}  // namespace

TEST_CASE("api: a watch from a compacted resourceVersion is a 200 with one ERROR event carrying 410") {
  FakeApiServer api;
  api.put_pod(make_pod("ml", "a", "uid-a", "n1", 1));
  const uint64_t before = api.resource_version();
  api.put_pod(make_pod("ml", "b", "uid-b", "n1", 1));
  api.compact();
  const std::vector<json> events = watch_events(api, "resourceVersion=" + std::to_string(before));
  REQUIRE(events.size() == 1);
  CHECK(events[0]["type"] == "ERROR");
  CHECK(events[0]["object"]["kind"] == "Status");
  CHECK(events[0]["object"]["code"] == 410);
  CHECK(events[0]["object"]["reason"] == "Expired");
}

TEST_CASE("api: bookmarks come only when asked for, shaped as kube-apiserver's") {
  FakeApiServer api;
  api.put_pod(make_pod("ml", "a", "uid-a", "n1", 1));
  const std::string from = "resourceVersion=" + std::to_string(api.resource_version());
  std::atomic<bool> watching{true};
  std::thread bookmarks([&] {
    while (watching) {
      api.send_bookmarks();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  // Both watches at once (each lasts its timeoutSeconds).
  auto without_future = std::async(std::launch::async, [&] { return watch_events(api, from); });
  const std::vector<json> with = watch_events(api, from + "&allowWatchBookmarks=true");
  const std::vector<json> without = without_future.get();
  watching = false;
  bookmarks.join();
  CHECK(without.empty());
  REQUIRE_FALSE(with.empty());
  for (const json& e : with) {
    CHECK(e["type"] == "BOOKMARK");
    CHECK(e["object"]["kind"] == "Pod");
    CHECK(e["object"]["metadata"]["resourceVersion"].is_string());
    CHECK(e["object"]["metadata"].size() == 2);  // resourceVersion and a null creationTimestamp
  }
}

TEST_CASE("api: the extender resumes a watch from the last bookmark's resourceVersion") {
  FakeApiServer api;
  api.put_node(make_node("n1", "A100", 8));
  ExtenderProcess p(extender_args(api));
  REQUIRE(eventually([&] { return api.watch_requests("pods") >= 1; }));
  // Changes to nodes move the version on; the pod watch hears of them only through a bookmark.
  for (int i = 0; i < 5; ++i) api.put_node(make_node("n" + std::to_string(i + 2), "A100", 8));
  const uint64_t bookmarked = api.resource_version();
  // A bookmark sent and the stream dropped at once may race (the drop can end the stream before it
  // writes the bookmark): each round sends one, drops the stream, and waits for the watch to resume.
  bool resumed_from_bookmark = false;
  for (int round = 0; round < 20 && !resumed_from_bookmark; ++round) {
    const int watches = api.watch_requests("pods");
    api.send_bookmarks();
    REQUIRE(eventually([&] { return api.bookmarks_sent() > round; }));
    api.drop_watches();
    REQUIRE(eventually([&] { return api.watch_requests("pods") > watches; }));
    resumed_from_bookmark =
        api.last_watch_query("pods").find("resourceVersion=" + std::to_string(bookmarked) + "&") != std::string::npos;
  }
  CHECK(resumed_from_bookmark);
}

TEST_CASE("api: a field-selector watch says ADDED when a pod starts to match and DELETED when it stops") {
  FakeApiServer api;
  api.put_pod(make_pod("ml", "waiting", "uid-w", "", 1, 0, "Pending"));
  const std::string from = "resourceVersion=" + std::to_string(api.resource_version());
  api.put_pod(make_pod("ml", "waiting", "uid-w", "n1", 1, 0, "Running"));    // bound: starts to match
  api.put_pod(make_pod("ml", "waiting", "uid-w", "n1", 1, 0, "Succeeded"));  // finished: stops matching phase
  api.delete_pod("ml", "waiting");
  const auto types = [](const std::vector<json>& events) {
    std::vector<std::string> out;
    for (const json& e : events) out.push_back(e["type"]);
    return out;
  };
  // The three watches at once (each lasts its timeoutSeconds).
  auto bound = std::async(std::launch::async, [&] { return watch_events(api, from + "&fieldSelector=spec.nodeName%21%3D"); });
  auto unfiltered = std::async(std::launch::async, [&] { return watch_events(api, from); });
  const std::vector<json> running = watch_events(api, from + "&fieldSelector=spec.nodeName%21%3D%2Cstatus.phase%3D%3DRunning");
  CHECK(types(bound.get()) == std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"});
  REQUIRE(types(running) == std::vector<std::string>{"ADDED", "DELETED"});
  // A DELETED for an object that stopped matching carries its last matching state, at the new version.
  CHECK(running[1]["object"]["status"]["phase"] == "Running");
  CHECK(std::stoull(running[1]["object"]["metadata"]["resourceVersion"].get<std::string>()) >
        std::stoull(running[0]["object"]["metadata"]["resourceVersion"].get<std::string>()));
  CHECK(types(unfiltered.get()) == std::vector<std::string>{"MODIFIED", "MODIFIED", "DELETED"});
}

TEST_CASE("api: field selectors take = == != on the fields each kind has and answer 400 for any other") {
  FakeApiServer api;
  api.put_node(make_node("n1", "A100", 8));
  api.put_node(make_node("n2", "A100", 8));
  api.put_pod(make_pod("ml", "a", "uid-a", "n1", 1));
  api.put_pod(make_pod("ml", "b", "uid-b", "", 1, 0, "Pending"));
  auto client = api_client(api);
  auto items = [&](const std::string& path) {
    auto res = client->Get(path.c_str());
    REQUIRE(res);
    REQUIRE(res->status == 200);
    return json::parse(res->body)["items"].size();
  };
  CHECK(items("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1") == 1);
  CHECK(items("/api/v1/pods?fieldSelector=spec.nodeName%3D%3Dn1") == 1);
  CHECK(items("/api/v1/pods?fieldSelector=spec.nodeName%21%3D") == 1);
  CHECK(items("/api/v1/pods?fieldSelector=metadata.name%3Db") == 1);
  CHECK(items("/api/v1/nodes?fieldSelector=metadata.name%3Dn2") == 1);
  for (const std::string path : {"/api/v1/pods?fieldSelector=spec.nodeSelector%3Dx",
                                 "/api/v1/nodes?fieldSelector=spec.nodeName%3Dn1", "/api/v1/pods?fieldSelector=nonsense"}) {
    auto res = client->Get(path.c_str());
    REQUIRE(res);
    CHECK(res->status == 400);
    CHECK(json::parse(res->body)["reason"] == "BadRequest");
  }
}

TEST_CASE("api: a list's pages are read at its first page's resourceVersion") {
  FakeApiServer api;
  for (int i = 0; i < 5; ++i) api.put_pod(make_pod("ml", "p" + std::to_string(i), "uid-" + std::to_string(i), "n1", 1));
  auto client = api_client(api);
  auto first = client->Get("/api/v1/pods?limit=2");
  REQUIRE(first);
  const json page1 = json::parse(first->body);
  api.delete_pod("ml", "p4");  // after the first page: the later pages still hold it
  api.put_pod(make_pod("ml", "p5", "uid-5", "n1", 1));
  std::vector<std::string> names;
  for (const auto& pod : page1["items"]) names.push_back(pod["metadata"]["name"]);
  std::string token = page1["metadata"]["continue"];
  while (!token.empty()) {
    auto next = client->Get(("/api/v1/pods?limit=2&continue=" + token).c_str());
    REQUIRE(next);
    REQUIRE(next->status == 200);
    const json page = json::parse(next->body);
    CHECK(page["metadata"]["resourceVersion"] == page1["metadata"]["resourceVersion"]);
    for (const auto& pod : page["items"]) names.push_back(pod["metadata"]["name"]);
    token = page["metadata"].value("continue", "");
  }
  CHECK(names == std::vector<std::string>{"p0", "p1", "p2", "p3", "p4"});
  api.compact();
  auto expired = client->Get(("/api/v1/pods?limit=2&continue=" + page1["metadata"]["continue"].get<std::string>()).c_str());
  REQUIRE(expired);
  CHECK(expired->status == 410);
}

TEST_CASE("api: the extender counts the pods of every page of a list") {
  // The reflector lists 500 pods a page: 600 pods, the GPU ones on the second page.
  FakeApiServer api;
  api.put_node(make_node("n1", "A100", 8));
  api.put_node(make_node("n2", "A100", 8));
  for (int i = 0; i < 600; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "p%03d", i);
    api.put_pod(make_pod("ml", name, std::string("uid-") + name, "n1", i >= 592 ? 1 : 0));
  }
  ExtenderProcess p(extender_args(api));
  REQUIRE(eventually([&] { return api.watch_requests("pods") >= 1; }));
  CHECK(api.list_requests("pods") == 2);  // one list, two pages (each page is a request)
  // n1's 8 GPUs are all held by pods of the second page.
  CHECK(passing(p, {"n1", "n2"}) == std::vector<std::string>{"n2"});
}

TEST_CASE("api: a Binding whose name is not the URL's pod is a 400, and binds nothing") {
  FakeApiServer api;
  api.put_pod(make_pod("ml", "a", "uid-a", "", 1, 0, "Pending"));
  api.put_pod(make_pod("ml", "b", "uid-b", "", 1, 0, "Pending"));
  auto client = api_client(api);
  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", {{"name", "b"}, {"namespace", "ml"}, {"uid", "uid-b"}}},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "n1"}}}};
  auto res = client->Post("/api/v1/namespaces/ml/pods/a/binding", binding.dump(), "application/json");
  REQUIRE(res);
  CHECK(res->status == 400);
  CHECK(json::parse(res->body)["message"] == "name in URL does not match name in Binding object");
  CHECK(api.bindings().empty());
}

TEST_CASE("api: Lease updates need the current resourceVersion, a PUT may create, times are MicroTimes") {
  FakeApiServer api;
  auto client = api_client(api);
  const std::string path = "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases/costs";
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "costs"}, {"namespace", "gpu-extender"}}},
                {"spec", {{"holderIdentity", "a"}, {"renewTime", "2026-12-01T10:00:00.000000Z"}}}};
  auto created = client->Put(path.c_str(), lease.dump(), "application/json");  // missing: created
  REQUIRE(created);
  CHECK(created->status == 201);
  auto unconditional = client->Put(path.c_str(), lease.dump(), "application/json");
  REQUIRE(unconditional);
  CHECK(unconditional->status == 422);
  lease["metadata"]["resourceVersion"] = json::parse(created->body)["metadata"]["resourceVersion"];
  lease["spec"]["renewTime"] = "2026-12-01T10:00:01Z";  // seconds only: not a MicroTime
  auto bad_time = client->Put(path.c_str(), lease.dump(), "application/json");
  REQUIRE(bad_time);
  CHECK(bad_time->status == 400);
  lease["spec"]["renewTime"] = "2026-12-01T10:00:01.000000Z";
  auto renewed = client->Put(path.c_str(), lease.dump(), "application/json");
  REQUIRE(renewed);
  CHECK(renewed->status == 200);
  auto stale = client->Put(path.c_str(), lease.dump(), "application/json");  // the version it replaced
  REQUIRE(stale);
  CHECK(stale->status == 409);
}

TEST_CASE("api: watch lines split mid-way reach the extender whole") {
  FakeApiServer api;
  api.put_node(make_node("n1", "A100", 8));
  api.put_node(make_node("n2", "A100", 8));
  api.split_watch_lines(true);
  ExtenderProcess p(extender_args(api));
  REQUIRE(eventually([&] { return api.watch_requests("pods") >= 1 && api.watch_requests("nodes") >= 1; }));
  api.put_pod(make_pod("ml", "big", "uid-big", "n1", 8));
  CHECK(eventually([&] { return passing(p, {"n1", "n2"}) == std::vector<std::string>{"n2"}; }));
  api.put_node(make_node("n3", "A100", 8));
  CHECK(eventually([&] { return passing(p, {"n1", "n2", "n3"}) == std::vector<std::string>{"n2", "n3"}; }));
  api.delete_pod("ml", "big");
  CHECK(eventually([&] { return passing(p, {"n1", "n2", "n3"}).size() == 3; }));
}
