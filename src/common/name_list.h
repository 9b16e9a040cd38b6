#pragma once
// "a,b,c" as a list of names, for flags that take several (--scheduler-name). Thread-safe: pure.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace gpu_extender {

// The comma-separated names of `text`; nullopt when one is empty ("a,,b", "", "a,").
inline std::optional<std::vector<std::string>> split_names(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma == start) return std::nullopt;
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace gpu_extender
