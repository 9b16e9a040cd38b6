#pragma once
// The request log: one line per verb request, info when it was answered, warn with the error when not,
// and at debug level every refused node with its reason.
#include <cstddef>
#include <cstdint>

#include "gpu_extender/server/extender_service.h"

namespace gpu_extender {

struct RequestRecord {
  uint64_t id = 0;
  Verb verb = Verb::kFilter;
  int status = 200;
  size_t bytes_in = 0, bytes_out = 0;
  double read_ms = 0;  // reading the body, apart: a slow network or client is not a slow extender
  double ms = 0;       // from arrival to the answer being ready
};

void log_request(const RequestRecord& record, const VerbSummary& summary);

}  // namespace gpu_extender
