// The extender at kube-scheduler's pace: pods created together (a ReplicaSet's) are scheduled by a
// driver that does what scheduleOne does (pod i+1's /filter races pod i's /bind; ties broken at
// random), and must end where the same pods go when scheduled one by one.
#include <catch2/catch.hpp>
#include <fstream>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "scheduler_driver.h"

using nlohmann::json;
using test_support::DriverOptions;
using test_support::ExtenderProcess;
using test_support::FakeApiServer;
using test_support::make_node;
using test_support::Placement;
using test_support::SchedulerDriver;
using test_support::feasible_nodes_to_find;

namespace {

struct BurstCluster {
  FakeApiServer api;
  std::unique_ptr<ExtenderProcess> extender;
  size_t aaa_nodes = 0;  // nodes that take aaa pods (bbb never does)

  explicit BurstCluster(const std::vector<json>& nodes) {
    for (const auto& n : nodes) api.put_node(n);
    std::vector<std::string> args = api.extender_args();
    if (const char* wait = std::getenv("BURST_TEST_BIND_WAIT_MS")) args.insert(args.end(), {"--bind-wait-ms", wait});
    extender = std::make_unique<ExtenderProcess>(args);
    REQUIRE(test_support::eventually([&] { return get("/readyz") == 200; }));
    aaa_nodes = passing(1).size();  // every node that takes aaa pods, all empty now
  }
  ~BurstCluster() { extender.reset(); }

  int get(const std::string& path) const {
    httplib::Client client("127.0.0.1", extender->port());
    auto res = client.Get(path.c_str());
    return res ? res->status : 0;
  }
  // Nodes where the extender would let a pod requesting `aaa` pass, on its own view of usage. Asked
  // through /explain: a /filter would make the extender expect this probe's /bind.
  std::vector<std::string> passing(int aaa) const {
    json names = json::array();
    for (const auto& n : api.nodes()) names.push_back(n["metadata"]["name"]);
    const json args = {{"Pod", test_support::pending_pod("probe", 0, aaa)}, {"Nodes", nullptr}, {"NodeNames", names}};
    httplib::Client client("127.0.0.1", extender->port());
    auto res = client.Post("/explain", args.dump(), "application/json");
    std::vector<std::string> out;
    if (!res) return out;
    const json explained = json::parse(res->body);  // kept: a range-for over a temporary's member dangles
    for (const auto& n : explained["nodes"])
      if (n["verdict"] == "pass") out.push_back(n["node"]);
    return out;
  }

  std::vector<json> create_pods(const std::string& prefix, int count, int gpus, int aaa) {
    std::vector<json> pods;
    for (int i = 0; i < count; ++i) {
      pods.push_back(test_support::pending_pod(prefix + "-" + std::to_string(i), gpus, aaa));
      api.put_pod(pods.back());
    }
    return pods;
  }
  // Deletes the pods and waits until the extender's view has them gone (the next round starts empty).
  void delete_pods(const std::vector<json>& pods, int aaa_free_everywhere) {
    for (const auto& p : pods) api.delete_pod("burst", p["metadata"]["name"]);
    REQUIRE(test_support::eventually([&] { return passing(aaa_free_everywhere).size() == aaa_nodes; }));
  }
  std::vector<Placement> schedule(const std::vector<json>& pods, bool names_mode, bool sequential, uint64_t seed) {
    DriverOptions options;
    options.node_cache_capable = names_mode;
    options.sequential = sequential;
    options.seed = seed;
    SchedulerDriver driver(api, extender->port(), options);
    std::vector<Placement> placed = driver.schedule(pods);
    // As kube-scheduler places them: its default plugins (least allocated, spreading) pull towards
    // other nodes than the extender's packing, and the extender's weight has to win.
    CHECK(driver.timings().own_score_spread > 0);
    return placed;
  }
};

std::map<std::string, int> pods_per_node(const std::vector<Placement>& placements) {
  std::map<std::string, int> out;
  for (const auto& p : placements) {
    INFO(p.pod << ": " << p.error);
    CHECK(p.error.empty());
    ++out[p.node];
  }
  return out;
}

// Node names stripped: [10] and [10] compare equal whichever of two equal nodes the tie chose.
std::vector<int> shape(const std::map<std::string, int>& per_node) {
  std::vector<int> out;
  for (const auto& [node, count] : per_node) out.push_back(count);
  std::sort(out.rbegin(), out.rend());
  return out;
}

}  // namespace

TEST_CASE("burst: 20 bursts of 10 aaa pods pack onto one node, exactly as one by one") {
  const bool names_mode = GENERATE(false, true);
  INFO((names_mode ? "names mode" : "full mode"));
  BurstCluster c({make_node("worker-a", "", 0, 10), make_node("worker-b", "", 0, 10), make_node("bbb-node", "", 0, 12, 1)});

  auto one_by_one = c.create_pods("seq", 10, 0, 1);
  const std::map<std::string, int> sequential = pods_per_node(c.schedule(one_by_one, names_mode, true, 7));
  CHECK(shape(sequential) == std::vector<int>{10});
  CHECK(sequential.count("bbb-node") == 0);
  c.delete_pods(one_by_one, 10);

  for (int round = 0; round < 20; ++round) {
    INFO("burst " << round);
    auto pods = c.create_pods("r" + std::to_string(round), 10, 0, 1);
    const std::map<std::string, int> burst = pods_per_node(c.schedule(pods, names_mode, false, 100 + round));
    CHECK(shape(burst) == shape(sequential));
    CHECK(burst.count("bbb-node") == 0);
    c.delete_pods(pods, 10);
  }
}

TEST_CASE("burst: 100 aaa pods fill the most used node first, then the larger, as one by one") {
  const bool names_mode = GENERATE(false, true);
  INFO((names_mode ? "names mode" : "full mode"));
  BurstCluster c({make_node("aaa-50", "", 0, 50), make_node("aaa-40", "", 0, 40), make_node("aaa-30", "", 0, 30),
                  make_node("bbb-node", "", 0, 60, 1)});
  auto one_by_one = c.create_pods("seq", 100, 0, 1);
  const std::map<std::string, int> sequential = pods_per_node(c.schedule(one_by_one, names_mode, true, 3));
  // The policy: most aaa in use first, ties to more capacity, bbb never.
  CHECK(sequential == std::map<std::string, int>{{"aaa-50", 50}, {"aaa-40", 40}, {"aaa-30", 10}});
  c.delete_pods(one_by_one, 30);

  auto pods = c.create_pods("burst", 100, 0, 1);
  CHECK(pods_per_node(c.schedule(pods, names_mode, false, 11)) == sequential);
}

TEST_CASE("burst: 2-GPU pods fill nodes in the same best-fit order as one by one") {
  const bool names_mode = GENERATE(false, true);
  INFO((names_mode ? "names mode" : "full mode"));
  const std::vector<json> nodes = {make_node("a100-8", "A100", 8), make_node("a100-4", "A100", 4),
                                   make_node("a100-2", "A100", 2)};
  std::vector<std::string> sequential_order, burst_order;
  {
    BurstCluster c(nodes);
    for (const auto& p : c.schedule(c.create_pods("seq", 7, 2, 0), names_mode, true, 5)) {
      CHECK(p.error.empty());
      sequential_order.push_back(p.node);
    }
  }
  {
    BurstCluster c(nodes);
    for (const auto& p : c.schedule(c.create_pods("burst", 7, 2, 0), names_mode, false, 5)) {
      CHECK(p.error.empty());
      burst_order.push_back(p.node);
    }
  }
  // Best fit: the node whose free GPUs are closest to 2 first.
  CHECK(sequential_order ==
        std::vector<std::string>{"a100-2", "a100-4", "a100-4", "a100-8", "a100-8", "a100-8", "a100-8"});
  CHECK(burst_order == sequential_order);
}

TEST_CASE("driver: the nodes sent to the extender are numFeasibleNodesToFind of them") {
  // schedule_one.go: all of a cluster under 100 nodes; else N x (50 - N/125) / 100, at least 100, the
  // percentage at least 5; or N x percentageOfNodesToScore / 100 when it is set.
  CHECK(feasible_nodes_to_find(3, 0) == 3);
  CHECK(feasible_nodes_to_find(99, 0) == 99);
  CHECK(feasible_nodes_to_find(100, 0) == 100);  // 50% of 100 is 50, below the floor of 100
  CHECK(feasible_nodes_to_find(500, 0) == 500 * (50 - 4) / 100);
  CHECK(feasible_nodes_to_find(5000, 0) == 5000 * (50 - 40) / 100);
  CHECK(feasible_nodes_to_find(10000, 0) == 10000 * 5 / 100);  // 50 - 80 is below the floor of 5%
  CHECK(feasible_nodes_to_find(500, 100) == 500);
  CHECK(feasible_nodes_to_find(500, 10) == 100);
}
