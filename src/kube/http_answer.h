#pragma once
// HTTP/1.1 as the API client speaks it: a request written in one piece, and an answer read from a
// buffer (status line, headers, then the body by Content-Length, in chunks, or to the end of the
// connection), in pieces as they arrive, for watch streams.
//
// Why not cpp-httplib's client: it reads an answer's head a byte at a time (a virtual call each),
// matches the status line with a std::regex, keeps every header in a case-insensitive multimap, and
// checks with a poll() and a peek that a kept-alive connection is still open before each request. For
// a bind (one small request, one small answer) that was most of the user-space CPU the call cost.
// Here the head is parsed where it lies in the buffer, and only the three headers the client needs
// (Content-Length, Transfer-Encoding, Connection) are looked at.
//
// Sizes are bounded: a head of at most kMaxHeadBytes, a chunk-size line of at most 1 KiB, a body of
// at most the caller's limit.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>

#include "gpu_extender/common/status.h"

namespace gpu_extender::kube {

// Where an answer's bytes come from: a connection (plain or TLS), or a test's script.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `size` bytes into `out`, waiting for at least one: how many; 0 when the peer closed the
  // connection. Fails on an error or a timeout, saying which.
  virtual Result<size_t> read_some(char* out, size_t size) = 0;
};

// The request line and headers, ready to be followed by `content_length` bytes of body.
// `target` is percent-encoded where cpp-httplib's client encoded it (space, '+', ',', ';', '\'', CR,
// LF, bytes >= 0x80), so the API server sees the paths it saw before; `token` empty: no Authorization.
std::string request_head(std::string_view method, std::string_view target, std::string_view host_header,
                         std::string_view token, std::string_view content_type, size_t content_length,
                         bool keep_alive);

struct AnswerHead {
  enum class Framing { kLength, kChunked, kUntilClose, kNone };
  int status = 0;
  Framing framing = Framing::kNone;
  uint64_t length = 0;          // kLength: the body's size
  bool server_closes = false;   // "Connection: close", HTTP/1.0, or a body that ends with the connection
};

class AnswerReader {
 public:
  static constexpr size_t kMaxHeadBytes = size_t{64} * 1024;

  explicit AnswerReader(ByteSource& source) : source_(source) {}

  // The next answer's status line and headers (interim 1xx answers are skipped). On failure the
  // connection is not usable any more.
  Result<AnswerHead> read_head();

  // How a body's reading ended without failing: all of it was read, or on_data stopped it.
  enum class BodyEnd { kWhole, kStopped };
  // The body of the answer `head` describes, to `on_data` piece by piece as it arrives (a piece may
  // be empty), until it ends or on_data returns false (kStopped). Fails when the connection failed,
  // the framing is broken, or the body passes `max_bytes`. After a stop or a failure the connection
  // is not usable.
  Result<BodyEnd> read_body(const AnswerHead& head, uint64_t max_bytes,
                            const std::function<bool(std::string_view)>& on_data);

  // Bytes read from the connection and not yet consumed: a server sends nothing past its answer
  // unasked, so this is 0 between answers on a sound connection.
  size_t buffered() const { return end_ - begin_; }

 private:
  // A line ending in CRLF (or a bare LF) at the front of the buffer, without its end; reads more
  // until there is one. `limit`: its longest acceptable length.
  Result<std::string_view> next_line(size_t limit);
  // Reads more into the buffer (moving what is left of it to the front first). The end of the
  // connection fails, unless `end_is_error` is false: then it is `false`, and bytes read are `true`.
  Result<bool> fill(bool end_is_error = true);
  // Hands up to `wanted` bytes of body to on_data, reading as needed; `delivered` counts them.
  Result<BodyEnd> pass_body(uint64_t wanted, uint64_t max_bytes, uint64_t& delivered,
                            const std::function<bool(std::string_view)>& on_data);

  ByteSource& source_;
  std::array<char, kMaxHeadBytes> buffer_;  // not zeroed: only [begin_, end_) is ever read
  size_t begin_ = 0, end_ = 0;
};

}  // namespace gpu_extender::kube
