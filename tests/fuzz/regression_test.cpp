// Replays every saved input (seeds and past findings) through the fuzz targets, in the ordinary and
// sanitizer builds: a crash found once stays fixed.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../unit/test_support.h"
#include "fuzz_targets.h"

namespace fs = std::filesystem;

TEST_CASE("fuzz regressions: every saved input runs clean through its target") {
  const std::map<std::string, int (*)(const uint8_t*, size_t)> targets = {
      {"extender_args", fuzz::extender_args}, {"binding_args", fuzz::binding_args},
      {"preemption_args", fuzz::preemption_args}, {"watch_event", fuzz::watch_event},
      {"quantity", fuzz::quantity}, {"policy", fuzz::policy}};
  const fs::path root = test_support::source_path("tests/fuzz/regressions");
  size_t replayed = 0;
  for (const auto& [name, target] : targets) {
    const fs::path dir = root / name;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      INFO(entry.path());
      const std::string bytes = test_support::read_file(entry.path());
      CHECK(target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) == 0);
      ++replayed;
    }
  }
  CHECK(replayed > 0);
}
