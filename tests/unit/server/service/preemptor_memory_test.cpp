// Pods whose /preempt kept candidates: remembered for a while, then forgotten; bounded.
#include <catch2/catch.hpp>

#include "server/service/preemptor_memory.h"

using gpu_extender::PreemptorMemory;

TEST_CASE("preemptor memory: a pod is preempting from its /preempt answer until kRemembered has passed") {
  PreemptorMemory memory;
  const auto t0 = PreemptorMemory::Clock::now();
  CHECK_FALSE(memory.preempting("uid-p", t0));
  memory.remember("uid-p", t0);
  CHECK(memory.preempting("uid-p", t0 + std::chrono::seconds(1)));
  CHECK_FALSE(memory.preempting("uid-other", t0 + std::chrono::seconds(1)));
  CHECK_FALSE(memory.preempting("uid-p", t0 + PreemptorMemory::kRemembered));
  memory.remember("uid-p", t0 + PreemptorMemory::kRemembered);  // a second preemption: remembered again
  CHECK(memory.preempting("uid-p", t0 + PreemptorMemory::kRemembered + std::chrono::seconds(1)));
  memory.remember("", t0);  // a pod without a uid is never remembered
  CHECK_FALSE(memory.preempting("", t0));
}

TEST_CASE("preemptor memory: at most kMaxPods are remembered, the oldest forgotten first") {
  PreemptorMemory memory;
  const auto t0 = PreemptorMemory::Clock::now();
  for (size_t i = 0; i <= PreemptorMemory::kMaxPods; ++i) memory.remember("uid-" + std::to_string(i), t0);
  CHECK_FALSE(memory.preempting("uid-0", t0));
  CHECK(memory.preempting("uid-1", t0));
  CHECK(memory.preempting("uid-" + std::to_string(PreemptorMemory::kMaxPods), t0));
}
