// The real binary's view of the cluster through a fake API server over TLS with a bearer token: not ready
// until the first list, then names mode equal to full mode; watch events moving usage; dropped watches
// resumed, 410 and ERROR relisting; API faults answered from the last view, staleness shown, and
// recovered; objects not fully understood still counted.
#include <catch2/catch.hpp>

#include <thread>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "kube_support.h"
#include "metrics_support.h"

using nlohmann::json;
using test_support::eventually;
using test_support::ExtenderProcess;
using test_support::make_node;
using test_support::make_pod;
using namespace kube_support;

TEST_CASE("kube: not ready until the first list, then names mode equals full mode") {
  Cluster c;
  c.api.hold_lists(true);
  ExtenderProcess p(c.args());
  // The extender has asked for its lists and has none yet: it cannot be ready.
  REQUIRE(eventually([&] { return c.api.list_requests("pods") >= 1 && c.api.list_requests("nodes") >= 1; }));
  CHECK_FALSE(ready(p));
  c.api.hold_lists(false);
  REQUIRE(eventually([&] { return ready(p); }));
  CHECK(c.api.list_requests("pods") >= 1);
  CHECK(c.api.list_requests("nodes") >= 1);

  const json pod = gpu_pod("train", "uid-train", 4);
  json names_body = c.names_args(pod);
  names_body["NodeNames"].push_back("ghost");
  const json by_name = post_json(p, "/filter", names_body);
  const json by_object = post_json(p, "/filter", c.full_args(pod));
  CHECK(by_name["Error"] == "");
  CHECK(by_name["Nodes"].is_null());
  CHECK(by_name["NodeNames"] == json::array({"a100-4"}));  // the Succeeded pod on a100-4 holds nothing
  CHECK(by_name["NodeNames"] == by_object["NodeNames"]);
  for (const std::string node : {"a100-8", "t4-4", "bbb-node"}) CHECK(failure_of(by_name, node) == failure_of(by_object, node));
  CHECK(failure_of(by_name, "a100-8") == "only 2 of 8 GPUs free; pod requests 4");
  CHECK(by_name["FailedNodes"]["ghost"].get<std::string>().find("not in the extender's node cache") != std::string::npos);

  const json scores_by_name = post_json(p, "/prioritize", c.names_args(pod));
  const json scores_by_object = post_json(p, "/prioritize", c.full_args(pod));
  CHECK(scores_by_name == scores_by_object);
}

TEST_CASE("kube: watch events move usage") {
  Cluster c;
  ExtenderProcess p(c.args());
  REQUIRE(eventually([&] { return ready(p); }));
  const json body = c.names_args(gpu_pod("train", "uid-train", 4));
  CHECK(failure_of(post_json(p, "/filter", body), "a100-4").empty());
  c.api.put_pod(make_pod("ml", "grab", "uid-grab", "a100-4", 4));
  CHECK(eventually([&] { return failure_of(post_json(p, "/filter", body), "a100-4") == "only 0 of 4 GPUs free; pod requests 4"; }));
  c.api.put_pod(make_pod("ml", "grab", "uid-grab", "a100-4", 4, 0, "Succeeded"));
  CHECK(eventually([&] { return failure_of(post_json(p, "/filter", body), "a100-4").empty(); }));
  c.api.delete_pod("ml", "busy");  // 6 GPUs on a100-8 come free
  CHECK(eventually([&] { return failure_of(post_json(p, "/filter", body), "a100-8").empty(); }));
  c.api.put_node(make_node("a100-4", "T4", 4, 0, 0, "16384"));  // relabelled
  CHECK(eventually([&] { return failure_of(post_json(p, "/filter", body), "a100-4") == "gpu model T4 does not match requested A100"; }));
}

TEST_CASE("kube: a dropped watch resumes from its resourceVersion, 410 and ERROR relist") {
  Cluster c;
  // No writers' Lease: its renewals would move the API server's resourceVersion past the pods' list.
  ExtenderProcess p(c.args({"--no-group-preemption"}));
  REQUIRE(eventually([&] { return ready(p); }));
  const json body = c.names_args(gpu_pod("train", "uid-train", 4));
  REQUIRE(eventually([&] { return c.api.watch_requests("pods") >= 1; }));
  const int lists = c.api.list_requests("pods");
  const int watches = c.api.watch_requests("pods");

  const uint64_t version = c.api.resource_version();  // nothing changed since the list
  c.api.drop_watches();
  REQUIRE(eventually([&] { return c.api.watch_requests("pods") > watches; }));
  CHECK(c.api.list_requests("pods") == lists);  // resumed, not relisted
  CHECK(c.api.last_watch_query("pods").find("&resourceVersion=" + std::to_string(version) + "&") != std::string::npos);
  CHECK(c.api.last_watch_query("pods").find("allowWatchBookmarks=true") != std::string::npos);
  c.api.put_pod(make_pod("ml", "after-drop", "uid-after-drop", "a100-4", 4));
  CHECK(eventually([&] { return !failure_of(post_json(p, "/filter", body), "a100-4").empty(); }));

  c.api.send_error_event(410);
  CHECK(eventually([&] { return c.api.list_requests("pods") > lists; }));
  c.api.delete_pod("ml", "after-drop");
  CHECK(eventually([&] { return failure_of(post_json(p, "/filter", body), "a100-4").empty(); }));

  // History compacted while the stream was down: the resumed watch gets 410 Gone, so list again.
  const int lists_before_gone = c.api.list_requests("nodes");
  c.api.compact();
  c.api.drop_watches();
  CHECK(eventually([&] { return c.api.list_requests("nodes") > lists_before_gone; }));
  c.api.send_bookmarks();
  CHECK(ready(p));  // a lost watch never makes the extender unready
}

TEST_CASE("kube: API faults: the extender answers from its last view, shows staleness, and recovers") {
  Cluster c;
  ExtenderProcess p(c.args());
  REQUIRE(eventually([&] { return ready(p); }));
  const json body = c.names_args(gpu_pod("train", "uid-train", 4));
  const json before = post_json(p, "/filter", body);
  REQUIRE(before["NodeNames"] == json::array({"a100-4"}));

  c.api.fail_reads(500);  // lists and watches fail...
  c.api.drop_watches();   // ...and the open streams break
  const auto age = [&] {
    return test_support::value_of(test_support::scrape(p.port()), "gpu_extender_cluster_last_event_age_seconds");
  };
  CHECK(eventually([&] { return age() > 2.0; }));
  CHECK(post_json(p, "/filter", body)["NodeNames"] == before["NodeNames"]);  // still answering, from the last view
  CHECK(ready(p));  // a lost watch never makes it unready
  const double failures = test_support::value_of(test_support::scrape(p.port()),
                                                 R"(gpu_extender_watch_restarts_total{reason="error",resource="pods"})");
  CHECK(failures >= 1);
  CHECK(p.logged("watch pods failed: HTTP 500"));

  const double stale_age = age();
  c.api.fail_reads(0);  // the API server is back: changes made meanwhile arrive
  c.api.put_pod(make_pod("ml", "late", "uid-late", "a100-4", 4));
  CHECK(eventually([&] { return !failure_of(post_json(p, "/filter", body), "a100-4").empty(); }, std::chrono::seconds(40)));
  CHECK(age() < stale_age);  // fresh again: the event reset the age it had grown while the API was down
}

TEST_CASE("kube: a view whose watches fail past --unready-after-seconds is unready, and assumed pods wait for it") {
  Cluster c;
  ExtenderProcess p(c.args({"--unready-after-seconds", "2", "--assume-ttl-seconds", "1"}));
  REQUIRE(eventually([&] { return ready(p); }));
  const json pending = gpu_pod("train", "uid-train", 4);
  c.api.put_pod(pending);
  REQUIRE(eventually([&] { return c.api.watch_requests("pods") >= 1; }));
  c.api.silent_binds(true);  // only the watch could confirm the binding, and it is about to fail
  c.api.fail_reads(500);
  c.api.drop_watches();
  post_json(p, "/filter", c.names_args(pending));
  REQUIRE(post_json(p, "/bind", {{"PodName", "train"}, {"PodNamespace", "ml"}, {"PodUID", "uid-train"}, {"Node", "a100-4"}})["Error"] == "");

  // Past the bound, the view is stale: /readyz says so and why.
  httplib::Client client("127.0.0.1", p.port());
  CHECK(eventually([&] {
    auto res = client.Get("/readyz");
    return res && res->status == 503 && res->body.find("the cluster view is stale: watches failing") != std::string::npos;
  }));
  // Three times the assumption's TTL later, the bound pod still counts: nothing could have confirmed it.
  // A fixed wait, on purpose: what is checked is an expiry that does NOT happen, which no event marks;
  // the ledger's expiry pass runs every 200 ms, so 3 s gives it fifteen chances to expire the pod.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const json next = c.names_args(gpu_pod("next", "uid-next", 4));
  CHECK(failure_of(post_json(p, "/filter", next), "a100-4") == "only 0 of 4 GPUs free; pod requests 4");
  CHECK_FALSE(p.logged("assumed pod(s) expired", std::chrono::milliseconds(0)));

  // The API server is back: ready again, and the relist confirms what the assumption held.
  c.api.fail_reads(0);
  CHECK(eventually([&] { return ready(p); }, std::chrono::seconds(40)));
  CHECK(failure_of(post_json(p, "/filter", next), "a100-4") == "only 0 of 4 GPUs free; pod requests 4");
}

TEST_CASE("kube: a pod or node that cannot be fully understood still counts, and stops nothing") {
  Cluster c;
  // Any user can write this annotation on a pod; 10Pi of memory overflows int64 milli-units.
  json odd = make_pod("ml", "odd", "uid-odd", "a100-4", 3);
  odd["metadata"]["annotations"] = {{"gpu.nvidia.com/memory", "40GB"}};
  odd["spec"]["containers"][0]["resources"]["requests"] = {{"memory", "10Pi"}};
  c.api.put_pod(odd);
  json node = make_node("odd-node", "A100", 4);
  node["metadata"]["labels"]["gpu.nvidia.com/memory"] = "lots";
  c.api.put_node(node);
  ExtenderProcess p(c.args());
  REQUIRE(eventually([&] { return ready(p); }));  // the lists went through
  const json body = c.names_args(gpu_pod("train", "uid-train", 2));
  // The odd pod's 3 GPUs count on a100-4: one is left.
  CHECK(failure_of(post_json(p, "/filter", body), "a100-4") == "only 1 of 4 GPUs free; pod requests 2");
  const auto series = test_support::scrape(p.port());
  CHECK(test_support::value_of(series, R"(gpu_extender_watch_objects_not_understood_total{resource="pods"})") == 1);
  CHECK(test_support::value_of(series, R"(gpu_extender_watch_objects_not_understood_total{resource="nodes"})") == 1);
  CHECK(p.logged("pod ml/odd: pod annotation gpu.nvidia.com/memory: invalid quantity \"40GB\""));
  // The same through the watch: the view keeps going.
  json later = make_pod("ml", "odd-2", "uid-odd-2", "a100-8", 1);
  later["metadata"]["annotations"] = {{"gpu.nvidia.com/memory", "plenty"}};
  c.api.put_pod(later);
  CHECK(eventually([&] { return failure_of(post_json(p, "/filter", body), "a100-8") == "only 1 of 8 GPUs free; pod requests 2"; }));
  CHECK(test_support::value_of(test_support::scrape(p.port()),
                               R"(gpu_extender_watch_objects_not_understood_total{resource="pods"})") == 2);
}
