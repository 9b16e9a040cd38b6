#pragma once
// Reads a verb's request body into its workspace, under the body size limit and the memory budget.
//
// The body is charged to the budget before it is read, for its declared length, and again as it grows
// (chunked, gzip): concurrent large bodies wait their turn instead of exhausting the container's
// memory. The size limit is checked on the bytes as decoded: cpp-httplib checks Content-Length only,
// so a chunked body or a gzip one (inflated before it reaches us) would otherwise pass any size.
#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "server/transport/memory_budget.h"

namespace gpu_extender {

// How long a request waits for room in the memory budget: kube-scheduler gives an extender call 5 s
// (httpTimeout's default) in all, and the API server a webhook 10 s at most; waiting longer would answer
// a call its caller has given up on.
inline constexpr std::chrono::seconds kBudgetWait{5};

struct BodyLimits {
  size_t max_body_bytes = 0;
  int request_timeout_seconds = 0;  // for the message of a body that came too slowly
  const char* limit_name = "--max-body-bytes";  // what sets max_body_bytes, for the 413's message
};

// How reading ended, and the HTTP status and message when it did not end with a whole body.
struct BodyRead {
  enum class Outcome { kComplete, kOverBudget, kTooLarge, kTooSlow, kIncomplete, kEmpty };
  Outcome outcome = Outcome::kComplete;
  int status = 200;
  std::string error;
  bool complete() const { return outcome == Outcome::kComplete; }
  // The connection cannot go on (the body was not read to its end): close it after the answer.
  bool close_connection() const { return outcome != Outcome::kComplete && outcome != Outcome::kEmpty; }
};

// Reads a body of `declared` bytes (its Content-Length; 0 when it has none) with `read_content` into
// `body` (with room for the parser's padding, so it is parsed in place), charging `lease` as it grows;
// waits for budget room until `budget_deadline`. `refused_as_too_large`, asked when reading stopped
// early: the HTTP layer stopped it for the body's size.
BodyRead read_body(size_t declared, const httplib::ContentReader& read_content,
                   const std::function<bool()>& refused_as_too_large, const BodyLimits& limits, MemoryBudget& budget,
                   MemoryBudget::Lease& lease, std::chrono::steady_clock::time_point budget_deadline, std::string& body);

}  // namespace gpu_extender
