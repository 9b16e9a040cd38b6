// Names mode's scores: the request log's best nodes, and the scores kept between requests (the score
// memo, the lists remembered) answering as a fresh workspace and as full mode do while usage and live
// GPU utilisation change.
#include <catch2/catch.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "gpu_extender/server/extender_service.h"
#include "gpu_extender/usage/gpu_utilization.h"
#include "host_scores.h"
#include "names_mode_support.h"
#include "state/cluster_view_writes.h"

using namespace gpu_extender;
using names_mode_support::names_body;
using names_mode_support::two_node_cluster;

TEST_CASE("prioritize: the request log names the best three nodes, best first") {
  auto policy = Policy::build(default_policy_config());
  auto view = two_node_cluster(policy->schema());
  const ExtenderService service(ServiceParts{policy, nullptr, view, nullptr});
  VerbSummary summary;
  const Reply reply = service.handle(Verb::kPrioritize, names_body("a", 1), summary);
  REQUIRE(reply.status == 200);
  auto scores = test_support::scores_by_host(reply.body, names_body("a", 1));
  REQUIRE(scores["small"] > scores["large"]);  // the exact fit first
  CHECK(scores["unknown"] == 0);
  CHECK(summary.top_scores == "small=" + std::to_string(scores["small"]) + " large=" +
                                  std::to_string(scores["large"]) + " unknown=0");
}

namespace {
// kube-scheduler's cycle for one pod: /filter, then /prioritize of the names the filter passed, in the
// order of its answer. The answers, as text.
std::pair<std::string, std::string> cycle(const ExtenderService& service, const std::string& uid, int gpus) {
  VerbSummary summary;
  const Reply filtered = service.handle(Verb::kFilter, names_body(uid, gpus), summary);
  REQUIRE(filtered.status == 200);
  const auto passed = nlohmann::json::parse(filtered.body)["NodeNames"];
  std::string body = names_body(uid, gpus);
  body = body.substr(0, body.find(R"("NodeNames":)")) + R"("NodeNames":)" + passed.dump() + "}";
  const Reply scored = service.handle(Verb::kPrioritize, body, summary);
  REQUIRE(scored.status == 200);
  return {filtered.body, scored.body};
}
}  // namespace

TEST_CASE("score memo: kept scores and remembered lists answer as a fresh workspace does, as usage changes") {
  // Scores as they are (scoreBaseline: zero): by the end only one node passes, and under the default
  // baseline the one node sent scores 0 and leaves the answer, which this test reads.
  PolicyConfig config = default_policy_config();
  config.score_baseline = ScoreBaseline::kZero;
  auto policy = Policy::build(config);
  auto view = two_node_cluster(policy->schema());
  const ExtenderService kept(ServiceParts{policy, nullptr, view, nullptr});
  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  for (int pod = 0; pod < 6; ++pod) {
    const std::string uid = "p" + std::to_string(pod);
    const auto answers = cycle(kept, uid, 1);
    const ExtenderService fresh(ServiceParts{policy, nullptr, view, nullptr});
    CHECK(answers == cycle(fresh, uid, 1));
    view->count_in_flight(test_write(), pod % 3 == 0 ? "small" : "large", one, true);  // bound: the next pod sees it
  }
  // By now small is full and large has some GPUs in use: both answers changed along the way.
  const auto last = cycle(kept, "last", 1);
  CHECK(last.first.find(R"("small":)") != std::string::npos);  // small fails now
  CHECK(last.second.find(R"("Host":"large")") != std::string::npos);
}

TEST_CASE("score memo: names mode scores as full mode does, whether a pod's scorers rank nodes alone or together") {
  // Pods of 1 GPU (every scorer that applies scores a node alone: the memo keeps combined scores) and
  // of 1 GPU and 1 aaa (resourcePacking ranks the nodes together), one after another, each bound to a
  // node in turn. Full mode computes every score afresh from the node objects: the reference.
  auto policy = Policy::build(default_policy_config());
  auto view = std::make_shared<ClusterView>();
  nlohmann::json items = nlohmann::json::array();
  nlohmann::json names = nlohmann::json::array();
  {
    WireDecoder decoder;
    NodeView node;
    for (int i = 0; i < 24; ++i) {
      const std::string name = "n" + std::to_string(i);
      const std::string gpus = std::to_string(1 + i % 8), aaa = std::to_string(i % 5);
      const nlohmann::json object = {
          {"metadata",
           {{"name", name}, {"labels", {{"gpu.nvidia.com/model", "A100"}, {"gpu.nvidia.com/count", gpus}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", gpus}, {"custom.resource/aaa", aaa}}}}}};
      decoder.decode_event<NodeView>(nlohmann::json{{"type", "ADDED"}, {"object", object}}.dump(), policy->schema(), node);
      view->upsert<stored::Nodes>(test_write(), node);
      items.push_back(object);
      names.push_back(name);
    }
  }
  view->mark_nodes_synced(test_write());
  view->mark_pods_synced(test_write());
  ServiceParts parts{policy, view, view, nullptr};
  parts.bind_wait = std::chrono::milliseconds(0);
  const ExtenderService service(parts);
  for (int p = 0; p < 16; ++p) {
    const bool packed = p % 4 >= 2;  // two pods of each kind in turn: the memo is kept, then reset
    nlohmann::json requests = {{"nvidia.com/gpu", "1"}};
    if (packed) requests["custom.resource/aaa"] = "1";
    const std::string uid = "u" + std::to_string(p);
    const nlohmann::json pod = {
        {"metadata", {{"name", "p" + std::to_string(p)}, {"namespace", "ml"}, {"uid", uid}}},
        {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"requests", requests}}}}}}}}};
    VerbSummary summary;
    const Reply filtered =
        service.handle(Verb::kFilter, nlohmann::json{{"Pod", pod}, {"NodeNames", names}}.dump(), summary);
    REQUIRE(filtered.status == 200);
    const nlohmann::json passed = nlohmann::json::parse(filtered.body)["NodeNames"];
    REQUIRE(passed.size() > 2);
    const Reply by_name =
        service.handle(Verb::kPrioritize, nlohmann::json{{"Pod", pod}, {"NodeNames", passed}}.dump(), summary);
    nlohmann::json passed_items = nlohmann::json::array();
    for (const auto& item : items)
      if (std::find(passed.begin(), passed.end(), item["metadata"]["name"]) != passed.end()) passed_items.push_back(item);
    const Reply by_object = service.handle(
        Verb::kPrioritize, nlohmann::json{{"Pod", pod}, {"Nodes", {{"items", passed_items}}}}.dump(), summary);
    INFO("pod " << p << (packed ? " (aaa)" : ""));
    REQUIRE(by_name.status == 200);
    REQUIRE(by_object.status == 200);
    const std::set<std::string> sent = passed.get<std::set<std::string>>();
    const auto name_scores = test_support::scores_by_host(by_name.body, sent);
    const auto object_scores = test_support::scores_by_host(by_object.body, sent);
    CHECK(name_scores == object_scores);
    std::set<int64_t> distinct;
    for (const auto& [name, score] : name_scores) distinct.insert(score);
    CHECK(distinct.size() > 1);
    ResourceAmounts amounts;
    amounts.set(ViewSchema::kGpuResource, 1000);
    if (packed) amounts.set(ViewSchema::kPackedResource, 1000);
    view->count_in_flight(test_write(), passed[static_cast<size_t>(p * 7) % passed.size()].get<std::string>(), amounts, true);
  }
}

TEST_CASE("score memo: a node whose live GPU utilisation changed is scored again") {
  // Three identical 4-GPU nodes: only gpuIdle, fed by a (stand-in) Prometheus, tells them apart.
  std::mutex mutex;
  std::map<std::string, double> percent;
  httplib::Server prometheus;
  prometheus.Get("/api/v1/query", [&](const httplib::Request&, httplib::Response& res) {
    nlohmann::json result = nlohmann::json::array();
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [node, value] : percent)
      result.push_back({{"metric", {{"Hostname", node}}}, {"value", {1.0, std::to_string(value)}}});
    res.set_content(nlohmann::json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}}.dump(),
                    "application/json");
  });
  const int port = prometheus.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { prometheus.listen_after_bind(); });
  GpuUtilizationSource::Options options;
  options.url = "http://127.0.0.1:" + std::to_string(port);
  auto utilization = std::make_shared<GpuUtilizationSource>(options, [] { return std::string("gpu"); });
  auto set = [&](double n1, double n2, double n3) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      percent = {{"n1", n1}, {"n2", n2}, {"n3", n3}};
    }
    REQUIRE(utilization->refresh());
  };

  auto policy = Policy::build(default_policy_config());
  auto view = std::make_shared<ClusterView>();
  WireDecoder decoder;
  NodeView node;
  for (const char* name : {"n1", "n2", "n3"}) {
    const std::string event = std::string(R"({"type":"ADDED","object":{"metadata":{"name":")") + name +
                              R"(","labels":{"gpu.nvidia.com/model":"A100","gpu.nvidia.com/count":"4"}},)" +
                              R"("status":{"allocatable":{"nvidia.com/gpu":"4"}}}})";
    decoder.decode_event<NodeView>(event, policy->schema(), node);  // the node's views point into `event`
    view->upsert<stored::Nodes>(test_write(), node);
  }
  view->mark_nodes_synced(test_write());
  view->mark_pods_synced(test_write());
  ServiceParts parts{policy, view, view, nullptr};
  parts.bind_wait = std::chrono::milliseconds(0);
  parts.utilization = utilization;
  const ExtenderService service(parts);
  auto scores = [&](const std::string& uid) {
    VerbSummary summary;
    const Reply reply = service.handle(
        Verb::kPrioritize,
        R"({"Pod":{"metadata":{"name":"p","namespace":"ml","uid":")" + uid +
            R"("},"spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"1"}}}]}},"NodeNames":["n1","n2","n3"]})",
        summary);
    return test_support::scores_by_host(reply.body, std::set<std::string>{"n1", "n2", "n3"});
  };

  set(90, 10, 50);
  auto s = scores("a");
  CHECK(s["n2"] > s["n3"]);
  CHECK(s["n3"] > s["n1"]);
  set(0, 100, 50);  // the same pod's kind again: the memo is kept, and must not keep these nodes' scores
  s = scores("b");
  CHECK(s["n1"] > s["n3"]);
  CHECK(s["n3"] > s["n2"]);
  prometheus.stop();
  serving.join();
}
