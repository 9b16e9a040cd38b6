#pragma once
// What the HTTP tests share: a POST to the real binary with a generous read timeout.
#include <httplib.h>

#include <chrono>
#include <string>

#include "extender_process.h"

namespace test_support {

inline httplib::Result post(ExtenderProcess& p, const std::string& path, const std::string& body) {
  httplib::Client client("127.0.0.1", p.port());
  client.set_read_timeout(std::chrono::seconds(30));
  return client.Post(path.c_str(), body, "application/json");
}

}  // namespace test_support
