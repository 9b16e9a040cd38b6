// The real binary against a fake API server over TLS with a bearer token: cluster view, names mode,
// /bind, assumed pods, token rotation, relists, /preempt.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <fstream>
#include <thread>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "metrics_support.h"

using nlohmann::json;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;
using test_support::make_node;
using test_support::make_pod;

namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpu-extender-kube-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  std::string file(const std::string& name, const std::string& content) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << content;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

using test_support::eventually;

json post_json(ExtenderProcess& p, const std::string& path, const json& body, int* status = nullptr) {
  httplib::Client client("127.0.0.1", p.port());
  client.set_read_timeout(std::chrono::seconds(20));
  auto res = client.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(res);
  if (status) *status = res->status;
  return json::parse(res->body);
}

json gpu_pod(const std::string& name, const std::string& uid, int gpus) {
  json pod = make_pod("ml", name, uid, "", gpus);
  pod["metadata"]["annotations"] = {{"gpu.nvidia.com/model", "A100"}};
  pod["status"]["phase"] = "Pending";
  return pod;
}

// A small cluster: GPU nodes of two models, one with bbb, and pods holding some of them.
struct Cluster {
  FakeApiServer api;
  TempDir dir;
  std::string token_file = dir.file("token", "test-token\n");
  std::vector<json> nodes = {make_node("a100-8", "A100", 8), make_node("a100-4", "A100", 4),
                             make_node("t4-4", "T4", 4, 0, 0, "16384"), make_node("bbb-node", "A100", 4, 0, 1)};
  Cluster() {
    for (const auto& n : nodes) api.put_node(n);
    api.put_pod(make_pod("ml", "busy", "uid-busy", "a100-8", 6));
    api.put_pod(make_pod("ml", "done", "uid-done", "a100-4", 4, 0, "Succeeded"));
    api.put_pod(make_pod("ml", "waiting", "uid-waiting", "", 8, 0, "Pending"));
  }
  std::vector<std::string> args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a{"--kube-api-server", api.url(), "--kube-token-file", token_file, "--kube-ca-file",
                               test_support::TestCertificate::get().cert_file};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  json names_args(const json& pod) const {
    json names = json::array();
    for (const auto& n : nodes) names.push_back(n["metadata"]["name"]);
    return {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
  }
  json full_args(const json& pod) const {
    return {{"Pod", pod}, {"Nodes", {{"metadata", json::object()}, {"items", nodes}}}, {"NodeNames", nullptr}};
  }
};

bool ready(ExtenderProcess& p) {
  httplib::Client client("127.0.0.1", p.port());
  auto res = client.Get("/readyz");
  return res && res->status == 200;
}

std::string failure_of(const json& filter_result, const std::string& node) {
  for (const char* key : {"FailedNodes", "FailedAndUnresolvableNodes"})
    if (filter_result[key].is_object() && filter_result[key].contains(node)) return filter_result[key][node];
  return "";
}

}  // namespace

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

TEST_CASE("kube: /bind creates the Binding, the pod counts at once, until the TTL") {
  Cluster c;
  // Long enough that the filter right after the bind (milliseconds later) always falls inside it.
  ExtenderProcess p(c.args({"--assume-ttl-seconds", "5"}));
  REQUIRE(eventually([&] { return ready(p); }));
  const json pending = gpu_pod("train", "uid-train", 4);
  c.api.put_pod(pending);
  c.api.silent_binds(true);  // the watch will not confirm: only the assumption counts the pod
  post_json(p, "/filter", c.names_args(pending));  // the scheduler filters before it binds
  const json result = post_json(p, "/bind", {{"PodName", "train"}, {"PodNamespace", "ml"}, {"PodUID", "uid-train"}, {"Node", "a100-4"}});
  CHECK(result["Error"] == "");
  REQUIRE(c.api.bindings().size() == 1);
  CHECK(c.api.bindings()[0].node == "a100-4");
  CHECK(c.api.bindings()[0].uid == "uid-train");

  const json next = c.names_args(gpu_pod("next", "uid-next", 4));
  CHECK(failure_of(post_json(p, "/filter", next), "a100-4") == "only 0 of 4 GPUs free; pod requests 4");
  CHECK(eventually([&] { return failure_of(post_json(p, "/filter", next), "a100-4").empty(); }, std::chrono::seconds(30)));
  CHECK(p.logged("assumed pod(s) expired"));

  // Bound already, to the same node: success. To another node: a clear error. A pod that is gone: too.
  CHECK(post_json(p, "/bind", {{"PodName", "train"}, {"PodNamespace", "ml"}, {"PodUID", "uid-train"}, {"Node", "a100-4"}})["Error"] == "");
  CHECK(post_json(p, "/bind", {{"PodName", "train"}, {"PodNamespace", "ml"}, {"PodUID", "uid-train"}, {"Node", "a100-8"}})["Error"] ==
        "pod ml/train is already bound to node a100-4, not a100-8");
  CHECK(post_json(p, "/bind", {{"PodName", "gone"}, {"PodNamespace", "ml"}, {"PodUID", "u"}, {"Node", "a100-8"}})["Error"]
            .get<std::string>()
            .find("the pod no longer exists") != std::string::npos);
}

TEST_CASE("kube: /bind retries 5xx, and explains 403 and 401, the token file is re-read") {
  Cluster c;
  ExtenderProcess p(c.args());
  REQUIRE(eventually([&] { return ready(p); }));
  auto bind = [&](const std::string& name) {
    c.api.put_pod(gpu_pod(name, "uid-" + name, 1));
    return post_json(p, "/bind", {{"PodName", name}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + name}, {"Node", "a100-8"}})["Error"]
        .get<std::string>();
  };
  c.api.fail_next_binds(2, 500);
  CHECK(bind("retried") == "");
  c.api.fail_next_binds(1000, 503);
  CHECK(bind("unavailable").find("HTTP 503: etcd is having a bad day") != std::string::npos);
  c.api.fail_next_binds(0, 500);
  c.api.forbid_binds(true);
  CHECK(bind("forbidden").find("forbidden; the extender's role needs create on pods/binding") != std::string::npos);
  c.api.forbid_binds(false);

  // The projected token rotates: the file changes, the old token stops working, the next call works.
  c.api.accept_tokens({"rotated-token"});
  c.dir.file("token", "rotated-token\n");
  CHECK(bind("after-rotation") == "");
  CHECK(c.api.seen_tokens().back() == "rotated-token");
  c.api.accept_tokens({"someone-else"});
  CHECK(bind("refused").find("refused the extender's credentials (401 Unauthorized)") != std::string::npos);
}

TEST_CASE("kube: a dropped watch resumes from its resourceVersion, 410 and ERROR relist") {
  Cluster c;
  ExtenderProcess p(c.args());
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

TEST_CASE("kube: /preempt keeps candidates that pass after eviction, answers UIDs") {
  Cluster c;
  ExtenderProcess p(c.args());
  REQUIRE(eventually([&] { return ready(p); }));
  const json pod = gpu_pod("urgent", "uid-urgent", 4);
  const json victim = make_pod("ml", "busy", "uid-busy", "a100-8", 6);
  const json meta = {{"Pod", pod},
                     {"NodeNameToVictims", nullptr},
                     {"NodeNameToMetaVictims",
                      {{"a100-8", {{"Pods", {{{"UID", "uid-busy"}}}}, {"NumPDBViolations", 1}}},
                       {"t4-4", {{"Pods", {{{"UID", "uid-x"}}}}, {"NumPDBViolations", 0}}},
                       {"a100-4", {{"Pods", json::array()}, {"NumPDBViolations", 0}}}}}};
  json result = post_json(p, "/preempt", meta);
  CHECK(result == json({{"NodeNameToMetaVictims", {{"a100-8", {{"Pods", {{{"UID", "uid-busy"}}}}, {"NumPDBViolations", 1}}}}}}));

  const json full = {{"Pod", pod},
                     {"NodeNameToVictims", {{"a100-8", {{"Pods", {victim}}, {"NumPDBViolations", 0}}},
                                            {"bbb-node", {{"Pods", {make_pod("ml", "v2", "uid-v2", "bbb-node", 1)}}, {"NumPDBViolations", 0}}}}},
                     {"NodeNameToMetaVictims", nullptr}};
  result = post_json(p, "/preempt", full);
  CHECK(result == json({{"NodeNameToMetaVictims", {{"a100-8", {{"Pods", {{{"UID", "uid-busy"}}}}, {"NumPDBViolations", 0}}}}}}));

  // A victim the view does not know frees nothing: a100-8 still has only 2 free GPUs.
  const json unknown = {{"Pod", pod}, {"NodeNameToMetaVictims", {{"a100-8", {{"Pods", {{{"UID", "uid-nobody"}}}}, {"NumPDBViolations", 0}}}}}};
  CHECK(post_json(p, "/preempt", unknown)["NodeNameToMetaVictims"] == json::object());
  // A group member: groups are left out of preemption, so no candidate is kept, not even a100-8.
  json member = pod;
  member["metadata"]["annotations"]["gpu.nvidia.com/group"] = "trainer";
  member["metadata"]["annotations"]["gpu.nvidia.com/group-size"] = "2";
  json for_member = meta;
  for_member["Pod"] = member;
  CHECK(post_json(p, "/preempt", for_member) == json({{"NodeNameToMetaVictims", json::object()}}));
  int status = 0;
  CHECK(post_json(p, "/preempt", {{"Pod", pod}}, &status)["Error"] ==
        "NodeNameToVictims: neither NodeNameToVictims nor NodeNameToMetaVictims is given");
  CHECK(status == 400);
}

TEST_CASE("kube: a preemptor's /filter waits for its victims' deletions to reach the watch, other pods do not") {
  Cluster c;
  ExtenderProcess p(c.args());
  REQUIRE(eventually([&] { return ready(p); }));
  // a100-8 has 2 of its 8 GPUs free (busy holds 6): a 4-GPU pod fits only once busy goes.
  const json urgent = gpu_pod("urgent", "uid-urgent", 4);
  json one_node = c.names_args(urgent);
  one_node["NodeNames"] = json::array({"a100-8"});
  CHECK(post_json(p, "/filter", one_node)["NodeNames"].empty());
  const json meta = {{"Pod", urgent},
                     {"NodeNameToMetaVictims", {{"a100-8", {{"Pods", {{{"UID", "uid-busy"}}}}, {"NumPDBViolations", 0}}}}}};
  REQUIRE(post_json(p, "/preempt", meta)["NodeNameToMetaVictims"].contains("a100-8"));
  // The scheduler deletes the victim and retries at once; the deletion reaches the API server (and the
  // watch) 300 ms later, past the 20 ms any pod may wait, within the preemptor's longer wait.
  std::thread deleter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.api.delete_pod("ml", "busy");
  });
  const json answer = post_json(p, "/filter", one_node);
  deleter.join();
  INFO(answer.dump());
  CHECK(answer["NodeNames"] == json::array({"a100-8"}));
  // Another pod that did not preempt is judged on what the view has, without waiting for anything.
  c.api.put_pod(make_pod("ml", "busy-again", "uid-busy-again", "a100-8", 6));
  REQUIRE(eventually([&] { return post_json(p, "/filter", one_node)["NodeNames"].empty(); }));
  json other = c.names_args(gpu_pod("patient", "uid-patient", 4));
  other["NodeNames"] = json::array({"a100-8"});
  std::thread late_deleter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.api.delete_pod("ml", "busy-again");
  });
  const json refused = post_json(p, "/filter", other);
  late_deleter.join();
  CHECK(refused["NodeNames"].empty());
}

TEST_CASE("kube: without API access /preempt and names mode say so") {
  ExtenderProcess p;
  CHECK(post_json(p, "/preempt", {{"Pod", gpu_pod("x", "u", 1)}, {"NodeNameToMetaVictims", json::object()}})["Error"]
            .get<std::string>()
            .find("which need Kubernetes API access") != std::string::npos);
  CHECK(p.logged("no Kubernetes API configured"));
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

TEST_CASE("kube: a 409 is success only for the very pod, already on that node") {
  Cluster c;
  ExtenderProcess p(c.args());
  REQUIRE(eventually([&] { return ready(p); }));
  // The scheduler filtered the pod; meanwhile it got bound to a100-4 (a retried bind whose first
  // answer was lost): the API answers 409, and the pod is that pod on that node.
  json pod = gpu_pod("train", "uid-train", 1);
  c.api.put_pod(pod);
  post_json(p, "/filter", c.names_args(pod));
  pod["spec"]["nodeName"] = "a100-4";
  c.api.put_pod(pod);
  CHECK(post_json(p, "/bind", {{"PodName", "train"}, {"PodNamespace", "ml"}, {"PodUID", "uid-train"}, {"Node", "a100-4"}})["Error"] == "");
  // Re-created under the same name with another UID and bound there: the old UID's bind is not it.
  json old = gpu_pod("infer", "uid-old", 1);
  c.api.put_pod(old);
  post_json(p, "/filter", c.names_args(old));
  json recreated = gpu_pod("infer", "uid-new", 1);
  recreated["spec"]["nodeName"] = "a100-4";
  c.api.put_pod(recreated);
  const std::string error =
      post_json(p, "/bind", {{"PodName", "infer"}, {"PodNamespace", "ml"}, {"PodUID", "uid-old"}, {"Node", "a100-4"}})["Error"];
  INFO(error);
  CHECK(error.find("cannot bind pod ml/infer") == 0);
  CHECK(c.api.bindings().empty());  // neither call bound anything
}

TEST_CASE("explain: --kubeconfig and --pod NS/NAME explain a pending pod from the live cluster") {
  FakeApiServer api;
  api.put_node(make_node("a100-free", "A100", 4));
  api.put_node(make_node("a100-busy", "A100", 4));
  api.put_pod(make_pod("default", "running", "uid-run", "a100-busy", 3));              // 1 GPU left there
  api.put_pod(make_pod("default", "finished", "uid-done", "a100-free", 4, 0, "Succeeded"));  // holds nothing
  api.put_pod(make_pod("team-a", "train", "uid-train", "", 2));                        // the pending pod
  const std::string kubeconfig = api.write_kubeconfig();

  const auto r = test_support::run_binary(
      {"explain", "--kubeconfig", kubeconfig, "--pod", "team-a/train", "--format", "json"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json e = json::parse(r.output.substr(r.output.find('{')));
  CHECK(e["pod"] == "team-a/train");
  CHECK(e["best"] == "a100-free");  // the finished pod's GPUs are free again
  std::map<std::string, json> by_node;
  for (const auto& n : e["nodes"]) by_node[n["node"]] = n;
  REQUIRE(by_node.size() == 2);
  CHECK(by_node["a100-busy"]["verdict"] != "pass");  // the running pod's 3 GPUs are counted
  CHECK(by_node["a100-busy"]["rule"] == "gpuCount");
  CHECK(api.list_requests("pods") == 1);
  CHECK(api.list_requests("nodes") == 1);

  // The table, as an operator reads it; and a pod that does not exist says so.
  const auto table = test_support::run_binary({"explain", "--kubeconfig", kubeconfig, "--pod", "team-a/train"});
  CHECK(table.output.find("pod team-a/train (placement binpack): best node a100-free") != std::string::npos);
  const auto missing = test_support::run_binary({"explain", "--kubeconfig", kubeconfig, "--pod", "team-a/nope"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("GET /api/v1/namespaces/team-a/pods/nope: HTTP 404") != std::string::npos);
}

TEST_CASE("kubectl plugin: installed as kubectl-gpu_extender, explain NS/POD says why, from $KUBECONFIG") {
  FakeApiServer api;
  api.put_node(make_node("a100-busy", "A100", 4));
  api.put_node(make_node("t4", "T4", 8));
  api.put_pod(make_pod("default", "running", "uid-run", "a100-busy", 3));
  json train = make_pod("team-a", "train", "uid-train", "", 2);  // asks 2 A100s: 1 is free
  train["metadata"]["annotations"]["gpu.nvidia.com/model"] = "A100";
  api.put_pod(train);
  const std::string kubeconfig = api.write_kubeconfig();
  // kubectl finds a plugin by its file name on PATH and runs it with the words after the plugin's name.
  char folder[] = "/tmp/gpu-extender-plugin-XXXXXX";
  REQUIRE(mkdtemp(folder) != nullptr);
  const std::string plugin = std::string(folder) + "/kubectl-gpu_extender";
  REQUIRE(symlink(GPU_EXTENDER_BINARY, plugin.c_str()) == 0);
  const std::string env = "KUBECONFIG='" + kubeconfig + ":/nonexistent' ";

  const auto words = test_support::run_command(env + plugin + " explain team-a/train 2>&1");
  INFO(words.output);
  REQUIRE(words.exit_code == 0);
  // Words first: no node, counted by rule with a reason each; then the table.
  CHECK(words.output.find("Pod team-a/train fits no node: ") == 0);
  CHECK(words.output.find("1 refused by gpuCount (a100-busy: ") != std::string::npos);
  CHECK(words.output.find("1 refused by gpuModel (t4: ") != std::string::npos);
  CHECK(words.output.find("NODE") != std::string::npos);

  const auto as_json = test_support::run_command(env + plugin + " explain train -n team-a -o json 2>&1");
  INFO(as_json.output);
  REQUIRE(as_json.exit_code == 0);
  const json e = json::parse(as_json.output.substr(as_json.output.find('{')));
  CHECK(e["pod"] == "team-a/train");
  CHECK(e["best"].is_null());

  const auto wrong = test_support::run_command(env + plugin + " explain team-a/train -o yaml 2>&1");
  CHECK(wrong.exit_code == 2);
  CHECK(wrong.output.find("-o takes json") != std::string::npos);
  CHECK(test_support::run_command(plugin + " frobnicate 2>&1").output.find("unknown command frobnicate") != std::string::npos);
  unlink(plugin.c_str());
  rmdir(folder);
}

TEST_CASE("kube: /bind is refused on a port others reach without a client certificate, unless a flag says it is meant") {
  Cluster c;
  const json pending = gpu_pod("train", "uid-train", 4);
  c.api.put_pod(pending);
  const json bind = {{"PodName", "train"}, {"PodNamespace", "ml"}, {"PodUID", "uid-train"}, {"Node", "a100-4"}};
  {
    ExtenderProcess p(c.args({"--address", "0.0.0.0"}));
    REQUIRE(eventually([&] { return ready(p); }));
    CHECK(p.logged("/bind is refused"));
    const std::string error = post_json(p, "/bind", bind)["Error"];
    CHECK(error.find("asks no client certificate on --address 0.0.0.0") != std::string::npos);
    CHECK(error.find("--allow-unauthenticated-bind") != std::string::npos);
    CHECK(c.api.bindings().empty());
    // The other verbs are served as ever: only the one that writes to the cluster is refused.
    CHECK(post_json(p, "/filter", c.names_args(pending))["NodeNames"] == json::array({"a100-4"}));
  }
  ExtenderProcess p(c.args({"--address", "0.0.0.0", "--allow-unauthenticated-bind"}));
  REQUIRE(eventually([&] { return ready(p); }));
  post_json(p, "/filter", c.names_args(pending));
  CHECK(post_json(p, "/bind", bind)["Error"] == "");
  CHECK(c.api.bindings().size() == 1);
}
