#pragma once
// Reading the extender's /metrics text into series -> value, for tests.
#include <httplib.h>

#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace test_support {

// Every series of /metrics; a failed scrape throws (a test reading 0 from a server that did not
// answer would pass its "== 0" checks).
inline std::map<std::string, double> scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/metrics");
  std::map<std::string, double> series;
  if (!res || res->status != 200)
    throw std::runtime_error("scrape of 127.0.0.1:" + std::to_string(port) + "/metrics failed" +
                             (res ? ": HTTP " + std::to_string(res->status) : std::string(": no answer")));
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    series[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return series;
}

// The value of one series; a series that is not there throws (a renamed series must fail its test,
// not read as 0).
inline double value_of(const std::map<std::string, double>& series, const std::string& name) {
  auto it = series.find(name);
  if (it == series.end()) throw std::runtime_error("no series " + name + " in /metrics");
  return it->second;
}

}  // namespace test_support
