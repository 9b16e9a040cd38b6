#pragma once
// What the HTTP tests share: a POST to the real binary with a generous read timeout, and the scores
// the default policy must give, derived from a request's nodes by the formulas the README states.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "../unit/test_support.h"
#include "extender_process.h"

namespace test_support {

// Whether the extender answers /readyz with 200 within a few seconds (its cluster view has listed).
inline bool becomes_ready(ExtenderProcess& p) {
  httplib::Client client("127.0.0.1", p.port());
  return eventually([&] {
    auto res = client.Get("/readyz");
    return res && res->status == 200;
  });
}

inline httplib::Result post(ExtenderProcess& p, const std::string& path, const std::string& body) {
  httplib::Client client("127.0.0.1", p.port());
  client.set_read_timeout(std::chrono::seconds(30));
  return client.Post(path.c_str(), body, "application/json");
}

// The default policy's /prioritize scores of `passing` (full-mode `request`, no usage known), from the
// README's formulas: gpuFit = 100 - |GPUs - requested| x 10 (floored at 0), gpuIdle = (1 - the node's
// gpu.nvidia.com/utilization, else 0) x 100, combined = (7 x fit + 3 x idle) / 10; then the ordered
// scaling of score_scaling.h: round(combined / 10), each distinct value strictly below the one before,
// lifted to leave one step for each value below it. Other nodes score 0.
inline std::map<std::string, int> default_policy_scores(const nlohmann::json& request, const std::set<std::string>& passing) {
  int requested = 0;
  for (const auto& c : request["Pod"]["spec"]["containers"]) {
    const auto& resources = c["resources"];
    const auto& from = resources.contains("requests") && resources["requests"].contains("nvidia.com/gpu")
                           ? resources["requests"] : resources["limits"];
    requested += std::stoi(from.value("nvidia.com/gpu", "0"));
  }
  std::map<std::string, double> combined;
  for (const auto& node : request["Nodes"]["items"]) {
    const std::string name = node["metadata"]["name"];
    if (!passing.count(name)) continue;
    const int gpus = std::stoi(node["metadata"]["labels"].value("gpu.nvidia.com/count", "0"));
    const double fit = std::max(0, 100 - std::abs(gpus - requested) * 10);
    const auto annotations = node["metadata"].value("annotations", nlohmann::json::object());
    const double idle = (1 - std::stod(annotations.value("gpu.nvidia.com/utilization", "0"))) * 100;
    combined[name] = (7 * fit + 3 * idle) / 10;
  }
  std::vector<double> levels;
  for (const auto& [name, value] : combined) levels.push_back(value);
  std::sort(levels.rbegin(), levels.rend());
  levels.erase(std::unique(levels.begin(), levels.end(), [](double a, double b) { return std::abs(a - b) < 1e-9; }),
               levels.end());
  std::map<double, int> score_of_level;
  int previous = 11;
  for (size_t k = 0; k < levels.size(); ++k) {
    const int below = static_cast<int>(levels.size() - 1 - k);  // steps the values below this one need
    const int score = std::max(below, std::min(static_cast<int>(std::llround(levels[k] / 10)), previous - 1));
    score_of_level[levels[k]] = previous = score;
  }
  std::map<std::string, int> out;
  for (const auto& node : request["Nodes"]["items"]) {
    const std::string name = node["metadata"]["name"];
    out[name] = 0;
    for (const auto& [level, score] : score_of_level)
      if (combined.count(name) && std::abs(combined[name] - level) < 1e-9) out[name] = score;
  }
  return out;
}

}  // namespace test_support
