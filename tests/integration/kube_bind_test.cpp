// /bind through a fake API server over TLS with a bearer token: the Binding created and the pod counted at
// once, until the assumption's TTL; 5xx retried, 403 and 401 explained, the token file re-read; a 409
// success only for the very pod on that node; refused on a port others reach without a certificate.
#include <catch2/catch.hpp>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "kube_support.h"

using nlohmann::json;
using test_support::eventually;
using test_support::ExtenderProcess;
using test_support::make_pod;
using namespace kube_support;

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
