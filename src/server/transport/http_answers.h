#pragma once
// What both files of HttpService answer with: JSON, and an error as the protocol's Error object.
#include <httplib.h>

#include <string>
#include <string_view>

#include "gpu_extender/wire/wire_encode.h"

namespace gpu_extender {

inline constexpr const char* kJson = "application/json";

inline void send_error(httplib::Response& res, int status, std::string_view message) {
  std::string body;
  encode_error_object(message, body);
  res.status = status;
  res.set_content(body, kJson);
}

// The GET paths of the probe routes (http_probes.cpp), on the verbs' port and on --metrics-port.
inline constexpr const char* kProbePaths[] = {"/healthz", "/readyz", "/version", "/metrics"};

}  // namespace gpu_extender
