#pragma once
// Appending JSON to a std::string: the one place that knows JSON string escaping.
// Every response body and log line in JSON is written through these. Thread-safe: pure functions.
#include <cstdint>
#include <string>
#include <string_view>

namespace gpu_extender {

// Appends `text` as a quoted JSON string. Control characters and quotes are escaped; bytes that are not
// valid UTF-8 are replaced by U+FFFD, as Go's encoding/json does, so the output is always valid JSON.
void append_json_string(std::string& out, std::string_view text);

void append_json_int(std::string& out, int64_t value);

}  // namespace gpu_extender
