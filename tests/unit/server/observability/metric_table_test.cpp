// The metric table (server/observability/metric_table.h) is the one list of what /metrics exports: its
// names are well formed, and docs/observability.md's metrics table documents exactly these, no more, no fewer.
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <string>

#include "server/observability/metric_table.h"
#include "test_support.h"

using namespace gpu_extender;

namespace {
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
// The guide's words for a metric: its name without gpu_extender_ (process_* as they are).
std::string readme_name(const std::string& name) {
  const std::string prefix = "gpu_extender_";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}
}  // namespace

TEST_CASE("metric table: each name once, prefixed, counters and only counters ending in _total") {
  std::set<std::string> names;
  for (const MetricSpec& m : kMetricSpecs) {
    const std::string name = m.name;
    INFO(name);
    CHECK(names.insert(name).second);
    CHECK((name.rfind("gpu_extender_", 0) == 0 || name.rfind("process_", 0) == 0));
    CHECK(ends_with(name, "_total") == (m.type == prometheus::MetricType::Counter));
    CHECK(std::string(m.help).size() > 10);
  }
}

TEST_CASE("metric table: docs/observability.md documents every metric and no other") {
  const std::string section = test_support::read_file(test_support::source_path("docs/observability.md"));
  REQUIRE(section.find("# Observability") == 0);
  std::set<std::string> table;
  for (const MetricSpec& m : kMetricSpecs) {
    table.insert(readme_name(m.name));
    INFO(m.name);
    const std::string word = "`" + readme_name(m.name);
    CHECK((section.find(word + "`") != std::string::npos || section.find(word + "{") != std::string::npos));
  }
  // Every metric-like word in the first column of the section's table (and the process_ line) is one.
  const std::regex row(R"(\n\| ([^|]*(?:\\\|[^|]*)*) \|)");
  const std::regex word(R"(`([a-z][a-z0-9_]*)[`{])");
  std::set<std::string> documented;
  for (auto r = std::sregex_iterator(section.begin(), section.end(), row); r != std::sregex_iterator(); ++r) {
    const std::string cell = (*r)[1];
    for (auto w = std::sregex_iterator(cell.begin(), cell.end(), word); w != std::sregex_iterator(); ++w)
      documented.insert((*w)[1]);
  }
  documented.erase("metric");
  REQUIRE(documented.size() > 20);
  for (const std::string& d : documented) {
    INFO(d);
    CHECK(table.count(d) == 1);
  }
}
