// Names mode keeps each node's verdict between requests (VerdictMemo) and judges a node again only
// when it, the pod's facts or the policy changed. These cases change one of them at a time and check
// the answer against what a fresh judgement gives.
#include <catch2/catch.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>

#include "gpu_extender/kube/cluster_view.h"
#include "gpu_extender/server/extender_service.h"
#include "gpu_extender/usage/gpu_utilization.h"
#include "host_scores.h"
#include "server/service/node_memo.h"

using namespace gpu_extender;

namespace {

std::shared_ptr<ClusterView> two_node_cluster(const ViewSchema& schema) {
  auto view = std::make_shared<ClusterView>();
  WireDecoder decoder;
  NodeView node;
  for (const char* name : {"small", "large"}) {
    const int gpus = std::string_view(name) == "small" ? 1 : 8;
    const std::string event = std::string(R"({"type":"ADDED","object":{"metadata":{"name":")") + name +
                              R"(","labels":{"gpu.nvidia.com/model":"A100","gpu.nvidia.com/count":")" +
                              std::to_string(gpus) + R"("}},"status":{"allocatable":{"nvidia.com/gpu":")" +
                              std::to_string(gpus) + R"("}}}})";
    decoder.decode_node_event(event, schema, node);
    view->upsert_node(node);
  }
  view->mark_nodes_synced();
  view->mark_pods_synced();
  return view;
}

std::string names_body(const std::string& uid, int gpus, const std::string& annotations = "{}") {
  return R"({"Pod":{"metadata":{"name":"p-)" + uid + R"(","namespace":"ml","uid":")" + uid +
         R"(","annotations":)" + annotations +
         R"(},"spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":")" + std::to_string(gpus) +
         R"("}}}]}},"NodeNames":["small","large","unknown"]})";
}

// Nodes that carry nothing but a name.
void add_bare_nodes(ClusterView& view, std::initializer_list<const char*> names) {
  NodeView node;
  for (const char* name : names) {
    node.name = name;
    view.upsert_node(node);
  }
}

// Per node name: "pass", or the map it failed into with its reason.
std::map<std::string, std::string> verdicts(const ExtenderService& service, const std::string& body) {
  VerbSummary summary;
  const Reply reply = service.handle(Verb::kFilter, body, summary);
  REQUIRE(reply.status == 200);
  const auto answer = nlohmann::json::parse(reply.body);
  std::map<std::string, std::string> out;
  for (const auto& name : answer["NodeNames"]) out[name.get<std::string>()] = "pass";
  for (const auto& [name, reason] : answer["FailedNodes"].items()) out[name] = "failed: " + reason.get<std::string>();
  for (const auto& [name, reason] : answer["FailedAndUnresolvableNodes"].items())
    out[name] = "unresolvable: " + reason.get<std::string>();
  return out;
}

}  // namespace

TEST_CASE("verdict memo: a node bound to in between is judged again, the others keep their verdict") {
  auto policy = Policy::build(default_policy_config());
  auto view = two_node_cluster(policy->schema());
  const ExtenderService service(ServiceParts{policy, nullptr, view, nullptr});
  auto first = verdicts(service, names_body("a", 1));
  CHECK(first["small"] == "pass");
  CHECK(first["large"] == "pass");
  CHECK(first["unknown"].find("not in the extender's node cache") != std::string::npos);

  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  view->count_in_flight("small", one, true);  // pod a's /bind (the ledger counts it)
  auto second = verdicts(service, names_body("b", 1));
  CHECK(second["small"] == "failed: only 0 of 1 GPUs free; pod requests 1");
  CHECK(second["large"] == "pass");
  view->count_in_flight("small", one, false);  // the bind failed
  CHECK(verdicts(service, names_body("c", 1))["small"] == "pass");
}

TEST_CASE("verdict memo: a pod asking for something else is judged afresh, and the first again after it") {
  auto policy = Policy::build(default_policy_config());
  auto view = two_node_cluster(policy->schema());
  const ExtenderService service(ServiceParts{policy, nullptr, view, nullptr});
  CHECK(verdicts(service, names_body("a", 1))["small"] == "pass");
  CHECK(verdicts(service, names_body("b", 2))["small"] == "unresolvable: node has 1 GPUs; pod requests 2");
  auto t4 = verdicts(service, names_body("c", 1, R"({"gpu.nvidia.com/model":"T4"})"));
  CHECK(t4["large"] == "unresolvable: gpu model A100 does not match requested T4");
  auto memory = verdicts(service, names_body("d", 1, R"({"gpu.nvidia.com/memory":"81920"})"));
  CHECK(memory["large"].rfind("unresolvable: ", 0) == 0);
  auto family = verdicts(service, names_body("e", 1, R"({"gpu.nvidia.com/family":"hopper"})"));
  CHECK(family["large"].rfind("unresolvable: node has no ", 0) == 0);
  auto invalid = verdicts(service, names_body("f", 1, R"({"gpu.nvidia.com/memory":"lots"})"));
  CHECK(invalid["large"].rfind("unresolvable: ", 0) == 0);
  CHECK(invalid["large"] != memory["large"]);
  auto again = verdicts(service, names_body("g", 1));
  CHECK(again["small"] == "pass");
  CHECK(again["large"] == "pass");
}

TEST_CASE("verdict memo: pod facts differ in every field a predicate reads") {
  PodRequest base;
  base.requests.set(ViewSchema::kGpuResource, 1000);
  const PodFacts facts = base.facts();
  CHECK(facts == base.facts());
  PodRequest other = base;
  other.name = "another-replica";  // identity is not a fact
  other.uid = "u2";
  CHECK(facts == other.facts());
  auto differs = [&](auto change) {
    PodRequest p = base;
    change(p);
    return !(facts == p.facts());
  };
  CHECK(differs([](PodRequest& p) { p.requests.set(ViewSchema::kGpuResource, 2000); }));
  CHECK(differs([](PodRequest& p) { p.requests.set(ViewSchema::kPackedResource, 0); }));  // listed, even as 0
  CHECK(differs([](PodRequest& p) { p.gpu_model = "A100"; }));
  CHECK(differs([](PodRequest& p) { p.gpu_model = ""; }));
  CHECK(differs([](PodRequest& p) { p.gpu_family = "ampere"; }));
  CHECK(differs([](PodRequest& p) { p.gpu_memory_mib = 1024; }));
  CHECK(differs([](PodRequest& p) { p.invalid_reason = "bad annotation"; }));
}

TEST_CASE("verdict memo: a reloaded policy judges every node again") {
  auto policy = Policy::build(default_policy_config());
  auto view = two_node_cluster(policy->schema());
  const ExtenderService service(ServiceParts{policy, nullptr, view, nullptr});
  CHECK(verdicts(service, names_body("a", 2))["small"] == "unresolvable: node has 1 GPUs; pod requests 2");
  PolicyConfig without_count = default_policy_config();
  std::erase(without_count.filters, "gpuCount");
  REQUIRE(service.replace_policy(Policy::build(without_count)).ok());
  CHECK(verdicts(service, names_body("b", 2))["small"] == "pass");
}

TEST_CASE("names lookup: slots stay with their nodes, and a memo is refreshed only where a node changed") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2"});
  NodeMemo memo;
  std::vector<uint32_t> slots;
  const std::vector<std::string_view> names{"n2", "n1", "gone"};
  memo.lookup(view, names, slots);
  REQUIRE(slots[0] != NodeMemo::kNoSlot);
  REQUIRE(slots[1] != NodeMemo::kNoSlot);
  CHECK(slots[0] != slots[1]);
  CHECK(slots[2] == NodeMemo::kNoSlot);
  const uint32_t n1 = slots[1], n2 = slots[0];
  const uint64_t n1_version = memo.version[n1], n2_version = memo.version[n2];

  ResourceAmounts two;
  two.set(ViewSchema::kGpuResource, 2000);
  view.count_in_flight("n1", two, true);
  memo.lookup(view, names, slots);
  CHECK(memo.version[n1] != n1_version);
  CHECK(memo.used[n1].get(ViewSchema::kGpuResource) == 2000);
  CHECK(memo.version[n2] == n2_version);

  view.delete_node("n1");  // its pod keeps the entry: no node object, so not a node to judge
  memo.lookup(view, names, slots);
  CHECK(slots[1] == NodeMemo::kNoSlot);
  view.count_in_flight("n1", two, false);  // now the entry goes, and its slot is free for the next node
  add_bare_nodes(view, {"n3"});
  const std::vector<std::string_view> n3{"n3"};
  memo.lookup(view, n3, slots);
  REQUIRE(slots[0] == n1);  // the slot is reused...
  CHECK(memo.version[n1] != n1_version);  // ...under a version no memo has seen
  CHECK(memo.node[n1]->view().name == "n3");
}

TEST_CASE("names lookup: a memo catches up from the view's change log, or from every slot once the log is past") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2", "n3"});
  const std::vector<std::string_view> names{"n1", "n2", "n3"};
  NodeMemo near, far;
  std::vector<uint32_t> slots;
  near.lookup(view, names, slots);
  far.lookup(view, names, slots);
  near.changed.clear();
  far.changed.clear();
  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  // A few changes: the memo reads only their slots, each once, however often it changed.
  for (int i = 0; i < 3; ++i) view.count_in_flight("n2", one, true);
  near.lookup(view, names, slots);
  REQUIRE(near.changed == std::vector<uint32_t>{slots[1]});
  CHECK(near.used[slots[1]].get(ViewSchema::kGpuResource) == 3000);
  near.changed.clear();
  // More changes than the log holds (a relist): every slot is read, and the memo is right again.
  for (int i = 0; i < 10000; ++i) view.count_in_flight(i % 2 == 0 ? "n1" : "n3", one, true);
  far.lookup(view, names, slots);
  std::vector<uint32_t> changed = far.changed;
  std::sort(changed.begin(), changed.end());
  std::vector<uint32_t> all = slots;
  std::sort(all.begin(), all.end());
  CHECK(changed == all);  // n2's change too: this memo had not seen it
  for (size_t i = 0; i < names.size(); ++i)
    CHECK(far.used[slots[i]].get(ViewSchema::kGpuResource) == (i == 1 ? 3000 : 5000000));
  near.lookup(view, names, slots);
  CHECK(near.used[slots[0]].get(ViewSchema::kGpuResource) == 5000000);
  CHECK(near.used[slots[2]].get(ViewSchema::kGpuResource) == 5000000);
}

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

TEST_CASE("names lookup: a list seen lately is taken by its bytes while the view's names stand") {
  ClusterView view;
  add_bare_nodes(view, {"n1", "n2"});
  NodeMemo memo;
  std::vector<uint32_t> first, again;
  const std::string json = R"(["n1","n2"])";
  memo.lookup(view, std::vector<std::string_view>{"n1", "n2"}, first, json);
  REQUIRE(first[0] != NodeMemo::kNoSlot);
  std::vector<uint32_t> unremembered;
  memo.lookup(view, std::vector<std::string_view>{"n2", "n1"}, unremembered, json);
  CHECK(unremembered[0] == first[1]);  // looked up by name: a lookup alone remembers nothing
  memo.remember(json, first);
  // The same bytes: the slots remembered, not the names given (which a real body could not differ
  // from; here they show which of the two answered).
  memo.lookup(view, std::vector<std::string_view>{"n2", "n1"}, again, json);
  CHECK(again == first);
  // A node goes and another takes its slot: the bytes are the same, the names are looked up again.
  view.delete_node("n1");
  add_bare_nodes(view, {"n3"});
  memo.lookup(view, std::vector<std::string_view>{"n1", "n2"}, again, json);
  CHECK(again[0] == NodeMemo::kNoSlot);
  CHECK(again[1] == first[1]);
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
  auto policy = Policy::build(default_policy_config());
  auto view = two_node_cluster(policy->schema());
  const ExtenderService kept(ServiceParts{policy, nullptr, view, nullptr});
  ResourceAmounts one;
  one.set(ViewSchema::kGpuResource, 1000);
  for (int pod = 0; pod < 6; ++pod) {
    const std::string uid = "p" + std::to_string(pod);
    const auto answers = cycle(kept, uid, 1);
    const ExtenderService fresh(ServiceParts{policy, nullptr, view, nullptr});
    CHECK(answers == cycle(fresh, uid, 1));
    view->count_in_flight(pod % 3 == 0 ? "small" : "large", one, true);  // bound: the next pod sees it
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
      decoder.decode_node_event(nlohmann::json{{"type", "ADDED"}, {"object", object}}.dump(), policy->schema(), node);
      view->upsert_node(node);
      items.push_back(object);
      names.push_back(name);
    }
  }
  view->mark_nodes_synced();
  view->mark_pods_synced();
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
    view->count_in_flight(passed[static_cast<size_t>(p * 7) % passed.size()].get<std::string>(), amounts, true);
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
    decoder.decode_node_event(event, policy->schema(), node);  // the node's views point into `event`
    view->upsert_node(node);
  }
  view->mark_nodes_synced();
  view->mark_pods_synced();
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
