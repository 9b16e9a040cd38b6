#pragma once
// The pieces of an HTTP/1.1 header field that both HTTP layers parse by hand: the verb port's plain
// requests (server/simple_request) and the API client's answers (kube/http_answer). Pure functions.
#include <cstdint>
#include <optional>
#include <string_view>

namespace gpu_extender {

// A field value without its optional white space (RFC 9110 OWS: spaces and tabs) at either end.
inline std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A Content-Length: decimal digits only, short enough not to overflow; nullopt otherwise.
inline std::optional<uint64_t> parse_content_length(std::string_view digits) {
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  uint64_t value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

}  // namespace gpu_extender
