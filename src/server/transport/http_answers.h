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

// Known paths answer other methods with 405 and the Allow header, not 404 (http_probes.cpp).
void method_not_allowed(httplib::Server& svr, const std::string& path, const char* allow);

}  // namespace gpu_extender
