#pragma once
// Timing /filter and /prioritize in process, as the server runs them: the body already in a pooled
// workspace (reading it is the HTTP benchmark's business), medians over repeated runs.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_support.h"
#include "gpu_extender/server/extender_service.h"
#include "server/service/workspace.h"  // the benchmarks time a verb with its body already in a workspace
#include "gpu_extender/wire/wire.h"

namespace bench {

// Every timed sample must be an answer, not an error: a 400 or an Error is as fast as it is wrong.
// Stops the benchmark (exit 1) with what failed.
inline void require_answered(gpu_extender::Verb verb, int status, const gpu_extender::VerbSummary& summary,
                             const std::string& answer) {
  if (status == 200 && summary.error.empty()) return;
  std::fprintf(stderr, "benchmark stopped: /%s answered %d%s%s: %.300s\n",
               std::string(gpu_extender::verb_name(verb)).c_str(), status, summary.error.empty() ? "" : ", Error ",
               summary.error.c_str(), answer.c_str());
  std::exit(1);
}

struct VerbTimings {
  Timing filter;
  Timing prioritize;
};

inline VerbTimings time_verbs(const gpu_extender::ExtenderService& service, const std::string& body) {
  using namespace gpu_extender;
  std::shared_ptr<Workspace> ws = service.workspaces(Verb::kFilter).acquire();
  ws->body.reserve(body.size() + kJsonPadding);
  ws->body.assign(body);
  auto timed = [&](Verb verb) {
    return measure([&] {
      VerbSummary summary;
      require_answered(verb, service.handle(verb, *ws, summary), summary, ws->answer);
    });
  };
  VerbTimings t;
  t.filter = timed(Verb::kFilter);
  t.prioritize = timed(Verb::kPrioritize);
  return t;
}

// One request in workspace `ws`, as the server runs it (the body copied in with its padding first, not
// timed): milliseconds.
inline double run_timed(const gpu_extender::ExtenderService& service, gpu_extender::Workspace& ws,
                        gpu_extender::Verb verb, const std::string& body) {
  ws.body.reserve(body.size() + gpu_extender::kJsonPadding);
  ws.body.assign(body);
  gpu_extender::VerbSummary summary;
  const auto t0 = std::chrono::steady_clock::now();
  const int status = service.handle(verb, ws, summary);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  require_answered(verb, status, summary, ws.answer);
  return ms;
}

// Scheduling cycles as kube-scheduler runs them: /filter then /prioritize of each body in turn, in
// one workspace (the pool hands sequential requests the same one), each timed on its own. Bodies
// differ (the names' order changes pod after pod), so nothing is measured against a copy of itself.
inline VerbTimings time_scheduling_cycles(const gpu_extender::ExtenderService& service,
                                          const std::vector<std::string>& bodies, double budget_ms = 3000) {
  using namespace gpu_extender;
  using clock = std::chrono::steady_clock;
  std::shared_ptr<Workspace> ws = service.workspaces(Verb::kFilter).acquire();
  std::vector<double> filter_ms, prioritize_ms;
  auto run = [&](Verb verb, const std::string& body) { return run_timed(service, *ws, verb, body); };
  for (const std::string& body : bodies) {  // warm-up: every body once
    run(Verb::kFilter, body);
    run(Verb::kPrioritize, body);
  }
  const auto start = clock::now();
  for (size_t i = 0; filter_ms.size() < 7 || std::chrono::duration<double, std::milli>(clock::now() - start).count() < budget_ms; ++i) {
    const std::string& body = bodies[i % bodies.size()];
    filter_ms.push_back(run(Verb::kFilter, body));
    prioritize_ms.push_back(run(Verb::kPrioritize, body));
  }
  return {summarize(filter_ms), summarize(prioritize_ms)};
}

// The same cycles, with /prioritize sent what kube-scheduler sends it: the nodes /filter let through,
// in the order of the filter's answer (findNodesThatPassExtenders keeps it; prioritizeNodes passes the
// list on). `pod_json`: the bodies' Pod, as JSON text. The view does not change while this runs, so
// each filter body's prioritize body is built once, from its first answer, before timing starts.
inline VerbTimings time_cycles_as_scheduled(const gpu_extender::ExtenderService& service,
                                            const std::vector<std::string>& filter_bodies, const std::string& pod_json,
                                            double budget_ms = 3000) {
  using namespace gpu_extender;
  using clock = std::chrono::steady_clock;
  std::shared_ptr<Workspace> ws = service.workspaces(Verb::kFilter).acquire();
  auto run = [&](Verb verb, const std::string& body) { return run_timed(service, *ws, verb, body); };
  std::vector<std::string> prioritize_bodies;
  for (const std::string& body : filter_bodies) {
    run(Verb::kFilter, body);
    const nlohmann::json answer = nlohmann::json::parse(ws->answer);
    prioritize_bodies.push_back("{\"Pod\":" + pod_json + ",\"Nodes\":null,\"NodeNames\":" +
                                answer.at("NodeNames").dump() + "}");
    run(Verb::kPrioritize, prioritize_bodies.back());
  }
  std::vector<double> filter_ms, prioritize_ms;
  const auto start = clock::now();
  for (size_t i = 0; filter_ms.size() < 7 || std::chrono::duration<double, std::milli>(clock::now() - start).count() < budget_ms;
       ++i) {
    filter_ms.push_back(run(Verb::kFilter, filter_bodies[i % filter_bodies.size()]));
    prioritize_ms.push_back(run(Verb::kPrioritize, prioritize_bodies[i % filter_bodies.size()]));
  }
  return {summarize(filter_ms), summarize(prioritize_ms)};
}

}  // namespace bench
