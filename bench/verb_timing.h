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

}  // namespace bench
