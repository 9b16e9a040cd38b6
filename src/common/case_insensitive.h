#pragma once
// ASCII case-insensitive key matching, as Go's encoding/json matches JSON keys to struct fields
// ("pod", "POD" and "Pod" all fill ExtenderArgs.Pod). Thread-safe: pure functions.
#include <string_view>

namespace gpu_extender {

bool equals_ignore_case(std::string_view a, std::string_view b);

}  // namespace gpu_extender
