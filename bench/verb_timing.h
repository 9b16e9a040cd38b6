#pragma once
// Timing /filter and /prioritize in process, as the server runs them: the body already in a pooled
// workspace (reading it is the HTTP benchmark's business), medians over repeated runs.
#include <memory>
#include <string>

#include "bench_support.h"
#include "gpu_extender/extender_service.h"
#include "gpu_extender/wire.h"

namespace bench {

struct VerbTimings {
  Timing filter;
  Timing prioritize;
};

inline VerbTimings time_verbs(const gpu_extender::ExtenderService& service, const std::string& body) {
  using namespace gpu_extender;
  std::shared_ptr<Workspace> ws = service.workspaces().acquire();
  ws->body.reserve(body.size() + kJsonPadding);
  ws->body.assign(body);
  auto timed = [&](Verb verb) {
    return measure([&] {
      VerbSummary summary;
      service.handle(verb, *ws, summary);
    });
  };
  VerbTimings t;
  t.filter = timed(Verb::kFilter);
  t.prioritize = timed(Verb::kPrioritize);
  return t;
}

// Scheduling cycles as kube-scheduler runs them: /filter then /prioritize of each body in turn, in
// one workspace (the pool hands sequential requests the same one), each timed on its own. Bodies
// differ (the names' order changes pod after pod), so nothing is measured against a copy of itself.
inline VerbTimings time_scheduling_cycles(const gpu_extender::ExtenderService& service,
                                          const std::vector<std::string>& bodies, double budget_ms = 3000) {
  using namespace gpu_extender;
  using clock = std::chrono::steady_clock;
  std::shared_ptr<Workspace> ws = service.workspaces().acquire();
  std::vector<double> filter_ms, prioritize_ms;
  auto run = [&](Verb verb, const std::string& body) {
    ws->body.reserve(body.size() + kJsonPadding);
    ws->body.assign(body);
    VerbSummary summary;
    const auto t0 = clock::now();
    service.handle(verb, *ws, summary);
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
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

}  // namespace bench
