#pragma once
// A /prioritize answer (HostPriorityList) read the way kube-scheduler reads it: scores added up by host
// name, a host that was sent but is not listed scoring 0 (schedule_one.go, prioritizeNodes). Checks
// what the extender promises on top: only hosts that were sent, each listed once, scores 1..10 (the
// 0s are left out).
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace test_support {

// The hosts an ExtenderArgs body sends: NodeNames in names mode, the node objects' names in full mode.
inline std::set<std::string> hosts_sent(const nlohmann::json& request) {
  std::set<std::string> out;
  if (request.contains("NodeNames") && request["NodeNames"].is_array())
    for (const auto& name : request["NodeNames"]) out.insert(name.get<std::string>());
  else
    for (const auto& node : request["Nodes"]["items"]) out.insert(node["metadata"]["name"].get<std::string>());
  return out;
}

inline std::map<std::string, int> scores_by_host(const std::string& answer, const std::set<std::string>& sent) {
  std::map<std::string, int> out;
  for (const std::string& host : sent) out[host] = 0;
  const nlohmann::json list = nlohmann::json::parse(answer);
  REQUIRE(list.is_array());
  std::set<std::string> listed;
  for (const auto& entry : list) {
    const std::string host = entry.at("Host");
    const int score = entry.at("Score");
    INFO("host " << host << " score " << score);
    CHECK(sent.count(host) == 1);
    CHECK(listed.insert(host).second);
    CHECK((score >= 1 && score <= 10));
    out[host] = score;
  }
  return out;
}

inline std::map<std::string, int> scores_by_host(const std::string& answer, const std::string& request) {
  return scores_by_host(answer, hosts_sent(nlohmann::json::parse(request)));
}

}  // namespace test_support
