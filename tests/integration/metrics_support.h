#pragma once
// Reading the extender's /metrics text into series -> value, for tests.
#include <httplib.h>

#include <map>
#include <sstream>
#include <string>

namespace test_support {

inline std::map<std::string, double> scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/metrics");
  std::map<std::string, double> series;
  if (!res || res->status != 200) return series;
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    series[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return series;
}

inline double value_of(const std::map<std::string, double>& series, const std::string& name) {
  auto it = series.find(name);
  return it == series.end() ? 0.0 : it->second;
}

}  // namespace test_support
