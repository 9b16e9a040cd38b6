#include "server/transport/simple_request.h"

#include <algorithm>

#include "common/case_insensitive.h"
#include "common/http_fields.h"

namespace gpu_extender {
namespace {

constexpr std::string_view kLineEnd = "\r\n";

// RFC 9110's tchar: what a header name is made of.
bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_value_char(char c) { return c == '\t' || (c >= 0x20 && c <= 0x7e); }

}  // namespace

std::optional<SimpleHead> parse_simple_head(std::string_view bytes, size_t max_head_bytes,
                                            std::span<const std::string> paths) {
  const size_t end = bytes.substr(0, max_head_bytes).find("\r\n\r\n");
  if (end == std::string_view::npos) return std::nullopt;  // not all here, or too large: cpp-httplib's
  SimpleHead head;
  head.head_bytes = end + 4;
  std::string_view rest = bytes.substr(0, end + 2);  // every line with its CRLF

  constexpr std::string_view kMethod = "POST ", kVersion = " HTTP/1.1";
  const size_t line_end = rest.find(kLineEnd);
  const std::string_view request_line = rest.substr(0, line_end);
  if (request_line.size() <= kMethod.size() + kVersion.size() || request_line.substr(0, kMethod.size()) != kMethod ||
      request_line.substr(request_line.size() - kVersion.size()) != kVersion)
    return std::nullopt;
  head.path = request_line.substr(kMethod.size(), request_line.size() - kMethod.size() - kVersion.size());
  const auto known = std::find(paths.begin(), paths.end(), head.path);
  if (known == paths.end()) return std::nullopt;
  head.path_index = static_cast<size_t>(known - paths.begin());
  rest.remove_prefix(line_end + kLineEnd.size());

  bool have_length = false, have_connection = false;
  while (!rest.empty()) {
    const size_t next = rest.find(kLineEnd);
    const std::string_view line = rest.substr(0, next);
    rest.remove_prefix(next + kLineEnd.size());
    const size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos) return std::nullopt;
    const std::string_view name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_token_char)) return std::nullopt;
    const std::string_view raw_value = line.substr(colon + 1);
    if (!std::all_of(raw_value.begin(), raw_value.end(), is_value_char)) return std::nullopt;
    const std::string_view value = trim_blanks(raw_value);
    if (equals_ignore_case(name, "Content-Length")) {
      const std::optional<uint64_t> length = parse_content_length(value);
      if (have_length || !length) return std::nullopt;  // twice, or not a number: cpp-httplib and the framing check
      have_length = true;
      head.content_length = *length;
    } else if (equals_ignore_case(name, "Connection")) {
      // cpp-httplib percent-decodes header values: a value with a '%' is left to it.
      if (value.find('%') != std::string_view::npos) return std::nullopt;
      if (!have_connection) head.client_closes = value == "close";
      have_connection = true;
    } else if (equals_ignore_case(name, "Transfer-Encoding") || equals_ignore_case(name, "Expect") ||
               equals_ignore_case(name, "Content-Encoding")) {
      return std::nullopt;
    }
  }
  if (!have_length) return std::nullopt;
  return head;
}

const char* status_reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Internal Server Error";
  }
}

}  // namespace gpu_extender
