#pragma once
// Appending JSON to a std::string: the one place that knows JSON string escaping.
// Every response body and log line in JSON is written through these. Thread-safe: pure functions.
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpu_extender {

// Appends `text` as a quoted JSON string. Control characters and quotes are escaped; bytes that are not
// valid UTF-8 are replaced by U+FFFD, as Go's encoding/json does, so the output is always valid JSON.
void append_json_string(std::string& out, std::string_view text);

void append_json_int(std::string& out, int64_t value);

// Appends to `out` through a pointer into room made in advance (`max_bytes`, an upper bound of what
// will be written), and gives back what was not used when done. For answers of thousands of small
// pieces, where std::string's capacity check on every push_back cost more than the bytes copied.
class PresizedAppender {
 public:
  PresizedAppender(std::string& out, size_t max_bytes) : out_(out) {
    const size_t start = out.size();
    out.resize(start + max_bytes);
    next_ = out.data() + start;
    end_ = out.data() + out.size();
  }
  ~PresizedAppender() { out_.resize(static_cast<size_t>(next_ - out_.data())); }
  PresizedAppender(const PresizedAppender&) = delete;
  PresizedAppender& operator=(const PresizedAppender&) = delete;

  void put(char c) { *next_++ = c; }
  void put(std::string_view text) {
    std::memcpy(next_, text.data(), text.size());
    next_ += text.size();
  }
  void put_int(int64_t value) { next_ = std::to_chars(next_, end_, value).ptr; }
  static constexpr size_t kMaxIntBytes = 20;  // "-9223372036854775808"

 private:
  std::string& out_;
  char* next_;
  char* end_;
};

}  // namespace gpu_extender
