#pragma once
// The requests the verb port reads without cpp-httplib's parser, and the status lines of their answers.
//
// Why: kube-scheduler's requests are all alike (POST, HTTP/1.1, a Content-Length, five or six short
// headers), and cpp-httplib's handling of each (a virtual read call per byte of the head, a
// case-insensitive multimap of the headers and four more it adds, a regular expression per route, a
// std::ostream and a std::stringstream per answer) was a tenth of the extender's CPU per placed pod.
// Such a head is read here where it already lies, in the connection's buffer.
//
// Which: a head whole in the bytes read so far, no larger than the header limit, with the request line
// "POST <path> HTTP/1.1" for one of the given paths (no query); header lines "Name: value" with
// token names, values of printable ASCII and tabs, each ended by CRLF; exactly one Content-Length, of
// digits; no Transfer-Encoding, Expect or Content-Encoding. Anything else (every malformed or unusual
// request, and its error answer) stays cpp-httplib's, as before: deciding consumes nothing.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpu_extender {

struct SimpleHead {
  std::string_view path;       // into the parsed bytes
  size_t path_index = 0;       // which of the given paths it is
  size_t head_bytes = 0;       // the request line and the headers, with the empty line after them
  size_t content_length = 0;
  bool client_closes = false;  // "Connection: close", as cpp-httplib reads it (its first Connection header)
};

std::optional<SimpleHead> parse_simple_head(std::string_view bytes, size_t max_head_bytes,
                                            std::span<const std::string> paths);

// cpp-httplib 0.11's reason phrase for a status (its table; "Internal Server Error" for one it lacks),
// so that an answer's status line reads the same whichever path wrote it.
const char* status_reason(int status);

}  // namespace gpu_extender
