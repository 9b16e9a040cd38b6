#include "http_answer.h"

#include "common/case_insensitive.h"
#include "common/http_fields.h"

#include <algorithm>
#include <cstring>

namespace gpu_extender::kube {
namespace {

void append_encoded_target(std::string& out, std::string_view target) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : target) {
    const auto byte = static_cast<unsigned char>(c);
    const bool encode = c == ' ' || c == '+' || c == ',' || c == ';' || c == '\'' || c == '\r' || c == '\n' || byte >= 0x80;
    if (!encode) {
      out += c;
      continue;
    }
    out += '%';
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  }
}

// A chunk-size line: hex digits, then optional chunk extensions (";name=value"), which mean nothing here.
bool parse_chunk_size(std::string_view line, uint64_t& out) {
  const size_t end = std::min(line.find(';'), line.size());
  const std::string_view digits = trim_blanks(line.substr(0, end));
  if (digits.empty() || digits.size() > 15) return false;
  out = 0;
  for (const char c : digits) {
    int v = -1;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    if (v < 0) return false;
    out = out * 16 + static_cast<uint64_t>(v);
  }
  return true;
}

// Whether a comma-separated header value lists `token` (case-insensitive): "chunked", "close".
bool lists_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = std::min(value.find(','), value.size());
    if (equals_ignore_case(trim_blanks(value.substr(0, comma)), token)) return true;
    value.remove_prefix(std::min(comma + 1, value.size()));
  }
  return false;
}

}  // namespace

std::string request_head(std::string_view method, std::string_view target, std::string_view host_header,
                         std::string_view token, std::string_view content_type, size_t content_length,
                         bool keep_alive) {
  std::string head;
  head.reserve(256 + target.size() + token.size() + content_length);  // the caller appends the body
  head.append(method).append(" ");
  append_encoded_target(head, target);
  head.append(" HTTP/1.1\r\nHost: ").append(host_header).append("\r\nAccept: application/json\r\n");
  head.append("User-Agent: gpu-extender\r\n");
  if (!token.empty()) head.append("Authorization: Bearer ").append(token).append("\r\n");
  if (!keep_alive) head.append("Connection: close\r\n");
  if (!content_type.empty()) head.append("Content-Type: ").append(content_type).append("\r\n");
  if (content_length > 0 || method == "POST" || method == "PUT" || method == "PATCH")
    head.append("Content-Length: ").append(std::to_string(content_length)).append("\r\n");
  head.append("\r\n");
  return head;
}

bool AnswerReader::fill(std::string& error, bool end_is_error) {
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) {
    error = "an answer line longer than " + std::to_string(buffer_.size()) + " bytes";
    return false;
  }
  const ssize_t n = source_.read_some(buffer_.data() + end_, buffer_.size() - end_, error);
  if (n > 0) {
    end_ += static_cast<size_t>(n);
    return true;
  }
  if (n == 0 && end_is_error) error = "the API server closed the connection mid-answer";
  return false;
}

bool AnswerReader::next_line(std::string_view& line, size_t limit, std::string& error) {
  size_t searched = begin_;
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const void* lf = std::memchr(buffer_.data() + searched, '\n', end_ - searched);
    if (lf != nullptr) {
      const size_t length = static_cast<size_t>(static_cast<const char*>(lf) - start);
      line = std::string_view(start, length);
      begin_ += length + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      return true;
    }
    if (end_ - begin_ > limit) {
      error = "an answer line longer than " + std::to_string(limit) + " bytes";
      return false;
    }
    const size_t had = end_ - begin_;
    if (!fill(error)) return false;
    searched = begin_ + had;  // fill() moved the unfinished line to the front
  }
}

bool AnswerReader::read_head(AnswerHead& head, std::string& error) {
  for (;;) {
    head = AnswerHead{};
    size_t head_bytes = 0;
    std::string_view line;
    if (begin_ == end_ && !fill(error, false)) {
      if (error.empty()) error = "the API server closed the connection before answering";
      return false;
    }
    if (!next_line(line, kMaxHeadBytes, error)) return false;
    head_bytes += line.size() + 2;
    // "HTTP/1.1 201 Created": the version, a space, three digits, then a space and a reason or nothing.
    const bool http10 = line.substr(0, 9) == "HTTP/1.0 ";
    if ((line.substr(0, 9) != "HTTP/1.1 " && !http10) || line.size() < 12 || (line.size() > 12 && line[12] != ' ') ||
        !std::all_of(line.begin() + 9, line.begin() + 12, [](char c) { return c >= '0' && c <= '9'; })) {
      error = "not an HTTP/1.1 answer: \"" + std::string(line.substr(0, 40)) + "\"";
      return false;
    }
    head.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    head.server_closes = http10;
    bool chunked = false, has_length = false;
    for (;;) {
      if (!next_line(line, kMaxHeadBytes, error)) return false;
      head_bytes += line.size() + 2;
      if (head_bytes > kMaxHeadBytes) {
        error = "an answer head longer than " + std::to_string(kMaxHeadBytes) + " bytes";
        return false;
      }
      if (line.empty()) break;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0) {
        error = "a malformed answer header: \"" + std::string(line.substr(0, 40)) + "\"";
        return false;
      }
      const std::string_view name = line.substr(0, colon), value = trim_blanks(line.substr(colon + 1));
      if (equals_ignore_case(name, "content-length")) {
        const std::optional<uint64_t> length = parse_content_length(value);
        if (!length || (has_length && *length != head.length)) {
          error = "a malformed Content-Length in the answer: \"" + std::string(value.substr(0, 40)) + "\"";
          return false;
        }
        head.length = *length;
        has_length = true;
      } else if (equals_ignore_case(name, "transfer-encoding")) {
        chunked = chunked || lists_token(value, "chunked");
      } else if (equals_ignore_case(name, "connection")) {
        if (lists_token(value, "close")) head.server_closes = true;
        if (http10 && lists_token(value, "keep-alive")) head.server_closes = false;
      }
    }
    if (head.status >= 100 && head.status < 200) continue;  // an interim answer: the real one follows
    if (head.status == 204 || head.status == 304) head.framing = AnswerHead::Framing::kNone;
    else if (chunked) head.framing = AnswerHead::Framing::kChunked;  // Transfer-Encoding wins (RFC 9112 6.3)
    else if (has_length) head.framing = AnswerHead::Framing::kLength;
    else {
      head.framing = AnswerHead::Framing::kUntilClose;
      head.server_closes = true;
    }
    return true;
  }
}

bool AnswerReader::pass_body(uint64_t wanted, uint64_t max_bytes, uint64_t& delivered,
                             const std::function<bool(std::string_view)>& on_data, std::string& error) {
  while (wanted > 0) {
    if (begin_ == end_ && !fill(error)) return false;
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(wanted, end_ - begin_));
    if (delivered + piece > max_bytes) {
      error = "an answer body larger than " + std::to_string(max_bytes) + " bytes";
      return false;
    }
    const std::string_view data(buffer_.data() + begin_, piece);
    begin_ += piece;
    wanted -= piece;
    delivered += piece;
    if (!on_data(data)) return false;  // stopped by the caller: error stays empty
  }
  return true;
}

bool AnswerReader::read_body(const AnswerHead& head, uint64_t max_bytes,
                             const std::function<bool(std::string_view)>& on_data, std::string& error) {
  uint64_t delivered = 0;
  switch (head.framing) {
    case AnswerHead::Framing::kNone:
      return true;
    case AnswerHead::Framing::kLength:
      if (head.length > max_bytes) {
        error = "an answer body larger than " + std::to_string(max_bytes) + " bytes";
        return false;
      }
      return pass_body(head.length, max_bytes, delivered, on_data, error);
    case AnswerHead::Framing::kUntilClose:
      for (;;) {
        if (begin_ == end_) {
          std::string why;
          if (!fill(why, false)) {
            if (!why.empty()) error = why;
            return why.empty();  // the end of the connection is the end of the body
          }
        }
        if (!pass_body(end_ - begin_, max_bytes, delivered, on_data, error)) return false;
      }
    case AnswerHead::Framing::kChunked:
      for (;;) {
        std::string_view line;
        if (!next_line(line, 1024, error)) return false;
        uint64_t size = 0;
        if (!parse_chunk_size(line, size)) {
          error = "a malformed chunk size in the answer: \"" + std::string(line.substr(0, 40)) + "\"";
          return false;
        }
        if (size == 0) break;
        if (!pass_body(size, max_bytes, delivered, on_data, error)) return false;
        if (!next_line(line, 2, error)) return false;  // the CRLF after the chunk's data
        if (!line.empty()) {
          error = "a chunk longer than its size in the answer";
          return false;
        }
      }
      for (size_t trailer_bytes = 0;;) {  // trailers, then the empty line that ends the answer
        std::string_view line;
        if (!next_line(line, kMaxHeadBytes, error)) return false;
        trailer_bytes += line.size() + 2;
        if (trailer_bytes > kMaxHeadBytes) {
          error = "answer trailers longer than " + std::to_string(kMaxHeadBytes) + " bytes";
          return false;
        }
        if (line.empty()) return true;
      }
  }
  return false;
}

}  // namespace gpu_extender::kube
