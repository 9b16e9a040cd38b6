// POST /mutate-pods on the webhook port: the AdmissionReview read under the same limits as a verb's
// body (size after decoding, the memory budget, the request deadline), then answered by the service.
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "server/transport/body_reader.h"
#include "server/transport/connection_server.h"
#include "server/transport/http_answers.h"
#include "server/transport/http_service.h"

namespace gpu_extender {
namespace {

// An AdmissionReview holds the object and, for updates, the old one: the API server refuses request
// bodies over 3 MiB, and etcd objects over 1.5 MiB, so a review is never near 8 MiB. A larger body is
// no review: 413, however it is encoded.
constexpr size_t kMaxReviewBytes = size_t{8} * 1024 * 1024;
// The review is parsed into a tree (nlohmann::json): about 10 bytes a byte for pod objects, measured
// with tests/integration's reviews, where a verb's body costs 6 (MemoryBudget::kBytesPerBodyByte). The
// lease is charged for this many body bytes' worth per byte before the tree is built.
constexpr size_t kTreeChargeFactor = 2;

}  // namespace

void HttpService::serve_review(const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& read_content) {
  const auto started = std::chrono::steady_clock::now();
  const size_t declared = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
  MemoryBudget::Lease lease(budget_);
  std::string body;
  const BodyRead read = read_body(declared, read_content, [&res] { return res.status == 413; },
                                  {std::min(options_.max_body_bytes, kMaxReviewBytes), options_.request_timeout_seconds,
                                   "the largest AdmissionReview accepted"},
                                  budget_, lease, started + kBudgetWait, body);
  if (!read.complete()) {
    if (read.outcome == BodyRead::Outcome::kOverBudget) res.set_header("Retry-After", "1");
    if (read.close_connection()) ConnectionServer::close_after_answer(res);
    spdlog::warn("admission review refused ({}): {}", read.status, read.error);
    send_error(res, read.status, read.error);
    return;
  }
  if (!lease.cover(body.size() * kTreeChargeFactor, started + kBudgetWait)) {
    res.set_header("Retry-After", "1");
    send_error(res, 503,
               "memory budget: " + std::to_string(budget_.in_use() >> 20) + " of " + std::to_string(budget_.total() >> 20) +
                   " MiB charged to bodies in flight (--memory-budget-bytes); retry shortly");
    return;
  }
  const ExtenderService::AdmissionReply reply = service_->admit(body);
  spdlog::info("admission {}: {}", reply.status, reply.detail);
  res.status = reply.status;
  res.set_content(reply.body, kJson);
}

}  // namespace gpu_extender
