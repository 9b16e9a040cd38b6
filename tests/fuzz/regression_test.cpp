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
      {"quantity", fuzz::quantity}, {"policy", fuzz::policy},
      {"admission_review", fuzz::admission_review}};
  const fs::path root = test_support::source_path("tests/fuzz/regressions");
  size_t replayed = 0, saved = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) saved += entry.is_regular_file();
  for (const auto& [name, target] : targets) {
    const fs::path dir = root / name;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      INFO(entry.path());
      const std::string bytes = test_support::read_file(entry.path());
      // A target returns 0 whatever it is given (libFuzzer's convention); a finding is a crash: a
      // sanitizer report, or the abort of the target's own differential check. Either ends this
      // process, and ctest reports the case failed.
      target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  CHECK(replayed > 0);
  CHECK(replayed == saved);  // every saved input belongs to a target, and none was skipped
}
