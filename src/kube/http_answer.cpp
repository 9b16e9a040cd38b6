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

Result<bool> AnswerReader::fill(bool end_is_error) {
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) return Status::failed("an answer line longer than " + std::to_string(buffer_.size()) + " bytes");
  const Result<size_t> n = source_.read_some(buffer_.data() + end_, buffer_.size() - end_);
  if (!n.ok()) return n.status();
  if (*n > 0) {
    end_ += *n;
    return true;
  }
  if (end_is_error) return Status::failed("the API server closed the connection mid-answer");
  return false;
}

Result<std::string_view> AnswerReader::next_line(size_t limit) {
  size_t searched = begin_;
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const void* lf = std::memchr(buffer_.data() + searched, '\n', end_ - searched);
    if (lf != nullptr) {
      const size_t length = static_cast<size_t>(static_cast<const char*>(lf) - start);
      std::string_view line(start, length);
      begin_ += length + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      return line;
    }
    if (end_ - begin_ > limit) return Status::failed("an answer line longer than " + std::to_string(limit) + " bytes");
    const size_t had = end_ - begin_;
    if (const Result<bool> filled = fill(); !filled.ok()) return filled.status();
    searched = begin_ + had;  // fill() moved the unfinished line to the front
  }
}

Result<AnswerHead> AnswerReader::read_head() {
  for (;;) {
    AnswerHead head;
    size_t head_bytes = 0;
    if (begin_ == end_) {
      const Result<bool> filled = fill(false);
      if (!filled.ok()) return filled.status();
      if (!*filled) return Status::failed("the API server closed the connection before answering");
    }
    Result<std::string_view> status_line = next_line(kMaxHeadBytes);
    if (!status_line.ok()) return status_line.status();
    std::string_view line = *status_line;
    head_bytes += line.size() + 2;
    // "HTTP/1.1 201 Created": the version, a space, three digits, then a space and a reason or nothing.
    const bool http10 = line.substr(0, 9) == "HTTP/1.0 ";
    if ((line.substr(0, 9) != "HTTP/1.1 " && !http10) || line.size() < 12 || (line.size() > 12 && line[12] != ' ') ||
        !std::all_of(line.begin() + 9, line.begin() + 12, [](char c) { return c >= '0' && c <= '9'; }))
      return Status::failed("not an HTTP/1.1 answer: \"" + std::string(line.substr(0, 40)) + "\"");
    head.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    head.server_closes = http10;
    bool chunked = false, has_length = false;
    for (;;) {
      const Result<std::string_view> header = next_line(kMaxHeadBytes);
      if (!header.ok()) return header.status();
      line = *header;
      head_bytes += line.size() + 2;
      if (head_bytes > kMaxHeadBytes)
        return Status::failed("an answer head longer than " + std::to_string(kMaxHeadBytes) + " bytes");
      if (line.empty()) break;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0)
        return Status::failed("a malformed answer header: \"" + std::string(line.substr(0, 40)) + "\"");
      const std::string_view name = line.substr(0, colon), value = trim_blanks(line.substr(colon + 1));
      if (equals_ignore_case(name, "content-length")) {
        const std::optional<uint64_t> length = parse_content_length(value);
        if (!length || (has_length && *length != head.length))
          return Status::failed("a malformed Content-Length in the answer: \"" + std::string(value.substr(0, 40)) + "\"");
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
    return head;
  }
}

Result<AnswerReader::BodyEnd> AnswerReader::pass_body(uint64_t wanted, uint64_t max_bytes, uint64_t& delivered,
                                                      const std::function<bool(std::string_view)>& on_data) {
  while (wanted > 0) {
    if (begin_ == end_)
      if (const Result<bool> filled = fill(); !filled.ok()) return filled.status();
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(wanted, end_ - begin_));
    if (delivered + piece > max_bytes)
      return Status::failed("an answer body larger than " + std::to_string(max_bytes) + " bytes");
    const std::string_view data(buffer_.data() + begin_, piece);
    begin_ += piece;
    wanted -= piece;
    delivered += piece;
    if (!on_data(data)) return BodyEnd::kStopped;
  }
  return BodyEnd::kWhole;
}

Result<AnswerReader::BodyEnd> AnswerReader::read_body(const AnswerHead& head, uint64_t max_bytes,
                                                      const std::function<bool(std::string_view)>& on_data) {
  uint64_t delivered = 0;
  switch (head.framing) {
    case AnswerHead::Framing::kNone:
      return BodyEnd::kWhole;
    case AnswerHead::Framing::kLength:
      if (head.length > max_bytes)
        return Status::failed("an answer body larger than " + std::to_string(max_bytes) + " bytes");
      return pass_body(head.length, max_bytes, delivered, on_data);
    case AnswerHead::Framing::kUntilClose:
      for (;;) {
        if (begin_ == end_) {
          const Result<bool> filled = fill(false);
          if (!filled.ok()) return filled.status();
          if (!*filled) return BodyEnd::kWhole;  // the end of the connection is the end of the body
        }
        Result<BodyEnd> passed = pass_body(end_ - begin_, max_bytes, delivered, on_data);
        if (!passed.ok() || *passed == BodyEnd::kStopped) return passed;
      }
    case AnswerHead::Framing::kChunked:
      for (;;) {
        const Result<std::string_view> size_line = next_line(1024);
        if (!size_line.ok()) return size_line.status();
        uint64_t size = 0;
        if (!parse_chunk_size(*size_line, size))
          return Status::failed("a malformed chunk size in the answer: \"" + std::string(size_line->substr(0, 40)) + "\"");
        if (size == 0) break;
        Result<BodyEnd> passed = pass_body(size, max_bytes, delivered, on_data);
        if (!passed.ok() || *passed == BodyEnd::kStopped) return passed;
        const Result<std::string_view> end = next_line(2);  // the CRLF after the chunk's data
        if (!end.ok()) return end.status();
        if (!end->empty()) return Status::failed("a chunk longer than its size in the answer");
      }
      for (size_t trailer_bytes = 0;;) {  // trailers, then the empty line that ends the answer
        const Result<std::string_view> line = next_line(kMaxHeadBytes);
        if (!line.ok()) return line.status();
        trailer_bytes += line->size() + 2;
        if (trailer_bytes > kMaxHeadBytes)
          return Status::failed("answer trailers longer than " + std::to_string(kMaxHeadBytes) + " bytes");
        if (line->empty()) return BodyEnd::kWhole;
      }
  }
  return Status::failed("an answer of unknown framing");
}

}  // namespace gpu_extender::kube
