#include "server/transport/body_reader.h"

#include <algorithm>

#include "server/transport/connection_server.h"
#include "gpu_extender/wire/wire.h"

namespace gpu_extender {
namespace {
constexpr size_t kMinCharge = size_t{64} * 1024;  // a body's first charge when it declares no (or a tiny) length
}  // namespace

BodyRead read_body(size_t declared, const httplib::ContentReader& read_content,
                   const std::function<bool()>& refused_as_too_large, const BodyLimits& limits, MemoryBudget& budget,
                   MemoryBudget::Lease& lease, std::chrono::steady_clock::time_point budget_deadline, std::string& body) {
  const size_t max = limits.max_body_bytes;
  bool over_budget = !lease.cover(std::min(std::max(declared, kMinCharge), max), budget_deadline);
  if (declared <= max) body.reserve(declared + kJsonPadding);
  bool over_limit = false;
  const bool complete = !over_budget && read_content([&](const char* data, size_t length) {
    if (body.size() + length > max) {
      over_limit = true;
      return false;
    }
    if (!lease.cover(std::min(std::max(body.size() + length, 2 * body.size()), max), budget_deadline)) {
      over_budget = true;
      return false;
    }
    if (body.capacity() < body.size() + length + kJsonPadding)
      body.reserve(std::min((body.size() + length) * 2, max) + kJsonPadding);
    body.append(data, length);
    return true;
  });
  BodyRead read;
  if (over_budget) {
    read = {BodyRead::Outcome::kOverBudget, 503,
            "memory budget: " + std::to_string(budget.in_use() >> 20) + " of " + std::to_string(budget.total() >> 20) +
                " MiB charged to bodies in flight (--memory-budget-bytes); retry shortly"};
  } else if (!complete) {
    // cpp-httplib stops reading past --max-body-bytes (and marks 413), or when the client goes away.
    if (over_limit || declared > max || refused_as_too_large())
      read = {BodyRead::Outcome::kTooLarge, 413, "request body larger than " + std::string(limits.limit_name) + " (" + std::to_string(max) + " bytes)"};
    else if (ConnectionServer::current_problem() == RequestProblem::kTimedOut)
      read = {BodyRead::Outcome::kTooSlow, 408,
              "request not received within --request-timeout-seconds (" +
                  std::to_string(limits.request_timeout_seconds) + " s)"};
    else
      read = {BodyRead::Outcome::kIncomplete, 400, "request body could not be read completely"};
  } else if (body.empty()) {
    read = {BodyRead::Outcome::kEmpty, 400, "empty request body: expected JSON"};
  }
  return read;
}

}  // namespace gpu_extender
