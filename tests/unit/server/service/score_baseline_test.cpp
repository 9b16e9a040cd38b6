// scoreBaseline (policy_config.h): /prioritize takes the lowest score of the nodes sent from every
// node's by default, which ranks every node as the scores as they are (scoreBaseline: zero) do and
// leaves the nodes at the lowest out of the answer.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gpu_extender/server/extender_service.h"
#include "host_scores.h"
#include "names_mode_support.h"

using namespace gpu_extender;
using names_mode_support::names_body;
using names_mode_support::two_node_cluster;

namespace {
// The /prioritize answer for one pod sent the two nodes both pass, under `baseline`.
std::string prioritize_two_nodes(ScoreBaseline baseline) {
  PolicyConfig config = default_policy_config();
  config.score_baseline = baseline;
  auto policy = Policy::build(config);
  const ExtenderService service(ServiceParts{policy, nullptr, two_node_cluster(policy->schema()), nullptr});
  std::string body = names_body("p", 1);
  body = body.substr(0, body.find(R"("NodeNames":)")) + R"("NodeNames":["small","large"]})";
  VerbSummary summary;
  const Reply reply = service.handle(Verb::kPrioritize, body, summary);
  REQUIRE(reply.status == 200);
  return reply.body;
}
}  // namespace

TEST_CASE("score baseline: the lowest score is taken from every node's, which ranks every node the same") {
  CHECK(default_policy_config().score_baseline == ScoreBaseline::kLowest);
  const std::set<std::string> sent{"small", "large"};
  const std::string as_they_are = prioritize_two_nodes(ScoreBaseline::kZero);
  const std::string lowest_off = prioritize_two_nodes(ScoreBaseline::kLowest);
  auto absolute = test_support::scores_by_host(as_they_are, sent);
  auto relative = test_support::scores_by_host(lowest_off, sent);
  REQUIRE(absolute["large"] > 0);  // both listed as they are
  REQUIRE(absolute["small"] > absolute["large"]);
  CHECK(nlohmann::json::parse(as_they_are).size() == 2);
  // The lowest off: large (the lowest) scores 0 and is left out; the difference, all the scheduler
  // ranks by, is the same.
  CHECK(nlohmann::json::parse(lowest_off).size() == 1);
  CHECK(relative["large"] == 0);
  CHECK(relative["small"] - relative["large"] == absolute["small"] - absolute["large"]);
}
