#pragma once
// Internal helpers over simdjson On Demand: turn its error codes into DecodeErrors that name the field.
// Only the wire decoders include this (simdjson is a heavy header).
#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string>
#include <string_view>

#include "gpu_extender/wire/wire.h"

namespace gpu_extender::wire {

namespace od = simdjson::ondemand;

[[noreturn]] inline void throw_json_error(std::string_view field, simdjson::error_code error,
                                          std::string_view expected) {
  if (error == simdjson::INCORRECT_TYPE || error == simdjson::NUMBER_ERROR) {
    throw DecodeError(std::string(field), "expected " + std::string(expected));
  }
  if (error == simdjson::DEPTH_ERROR) throw DecodeError(std::string(field), "JSON nested too deeply");
  throw DecodeError(std::string(field), std::string("malformed JSON (") + simdjson::error_message(error) + ")");
}

// Unwraps a simdjson result or throws a DecodeError for `field`.
template <typename T>
T take(simdjson::simdjson_result<T> result, std::string_view field, std::string_view expected) {
  T value;
  // get() is rvalue-only in simdjson: the move selects it (the type is trivially copyable).
  if (auto error = std::move(result).get(value)) throw_json_error(field, error, expected);  // NOLINT(performance-move-const-arg)
  return value;
}

inline od::object take_object(simdjson::simdjson_result<od::value> v, std::string_view field) {
  return take(v.get_object(), field, "an object");
}

inline od::object take_object(od::value& v, std::string_view field) {
  return take(v.get_object(), field, "an object");
}

// The length of a string's text, from `raw` (just after its opening quote) to its closing quote, when
// it holds no backslash; npos when it does (its escapes must be decoded then). On Demand's first pass
// has checked that every string is closed and holds no control characters, so without a backslash
// the bytes are the text. `raw` must lie in a buffer On Demand parses (it has simdjson's padding): the
// search reads 16 bytes at a time, up to 15 past the closing quote. A byte loop, or a memchr call per
// string, was slower than the copy into simdjson's string buffer this saves.
inline size_t plain_string_length(const char* raw) {
#if defined(__SSE2__)
  for (const char* p = raw;; p += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const auto quotes = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'))));
    const auto stops = quotes | static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'))));
    if (stops == 0) continue;
    const auto first = static_cast<unsigned>(__builtin_ctz(stops));
    return ((quotes >> first) & 1U) != 0 ? static_cast<size_t>(p - raw) + first : std::string_view::npos;
  }
#else
  for (const char* p = raw;; ++p) {
    if (*p == '"') return static_cast<size_t>(p - raw);
    if (*p == '\\') return std::string_view::npos;
  }
#endif
}

// Reads a string value into `text`: where it lies in the parsed bytes when it has no escapes
// (`in_place`: its bytes are then also its own JSON encoding), else unescaped by simdjson, which checks
// its escapes. Either way the value is consumed, never left to the iterator: On Demand steps over an
// unread string followed by ':' as if it were a key, so `"a":"b":"c"` would pass (a fuzzing find).
// simdjson's error when the value is not a string.
// Always inlined: called out of line, it made the validation of a 5,000-node body 1.7x slower.
[[gnu::always_inline]] inline simdjson::error_code read_string(od::value& value, std::string_view& text, bool& in_place) {
  const char* start = value.raw_json_token().data();
  in_place = false;
  if (*start == '"') {
    if (const size_t length = plain_string_length(start + 1); length != std::string_view::npos) {
      od::raw_json_string raw;
      if (auto error = value.get_raw_json_string().get(raw)) return error;
      text = {start + 1, length};
      in_place = true;
      return simdjson::SUCCESS;
    }
  }
  return value.get_string().get(text);
}

// A string's text, read by read_string (the view lives as long as wire.h says a decoded view does).
inline std::string_view take_string(simdjson::simdjson_result<od::value> v, std::string_view field) {
  od::value value = take(v, field, "a string");
  std::string_view text;
  bool in_place = false;
  if (auto error = read_string(value, text, in_place)) throw_json_error(field, error, "a string");
  return text;
}

// A member's key: where it lies in the parsed bytes when it has no escapes (nearly every key), else
// unescaped. The decoders read hundreds of thousands of keys in a large node list. Either view lives
// as long as wire.h says a decoded view does.
inline std::string_view field_key(simdjson::simdjson_result<od::field>& f, std::string_view where) {
  const char* raw = take(f.key(), where, "an object key").raw();
  if (const size_t length = plain_string_length(raw); length != std::string_view::npos) return {raw, length};
  return take(f.unescaped_key(), where, "an object key");
}

// True when the value is JSON null (and consumes it); false leaves the value for the caller.
inline bool take_null(od::value& v, std::string_view field) {
  bool is_null = false;
  if (auto error = v.is_null().get(is_null)) throw_json_error(field, error, "a value");
  return is_null;
}

// JSON's white space (RFC 8259: space, tab, line feed, carriage return).
inline bool is_json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A token as simdjson gives it (up to the next structural character) without the JSON white space
// that may follow it.
inline std::string_view without_trailing_space(std::string_view token) {
  while (!token.empty() && is_json_space(token.back()))
    token.remove_suffix(1);
  return token;
}

// The bytes of the JSON value that starts at `start` and ends just before `next_token` (the ',' ']' or
// '}' that follows it), without the white space between.
inline std::string_view value_bytes(const char* start, const char* next_token) {
  return without_trailing_space({start, static_cast<size_t>(next_token - start)});
}

// Whether `token` (white space after it allowed) is one JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
inline bool is_json_number(std::string_view token) {
  token = without_trailing_space(token);
  size_t i = 0;
  const size_t n = token.size();
  auto digits = [&] {
    const size_t from = i;
    while (i < n && token[i] >= '0' && token[i] <= '9') ++i;
    return i > from;
  };
  if (i < n && token[i] == '-') ++i;
  if (i < n && token[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < n && token[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < n && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < n && (token[i] == '+' || token[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == n;
}

// Whether the literal `token` (white space after it allowed) is exactly `word`.
inline bool is_literal(std::string_view token, std::string_view word) { return without_trailing_space(token) == word; }

[[noreturn]] inline void throw_invalid_json(std::string_view field, std::string_view what) {
  throw DecodeError(std::string(field), "not valid JSON: " + std::string(what));
}

// Reads every part of `v`, as a validating parser would: escape sequences, numbers, literals, and the
// grammar of every container. On Demand alone skips what the decoder does not read by counting
// brackets, so a skipped `tru`, `01` or `{"a" 1}` would pass. Scalars are checked on their bytes:
// nothing is copied or converted unless a string has escapes.
// Nesting is bounded below On Demand's own limit (its parser's max_depth, 1,024 from the document's
// root: walking past it is undefined, and asserts in a debug build), less the few levels above a
// field that the decoders walk to reach it. Go's encoding/json stops at 10,000.
constexpr int kMaxValidatedDepth = 960;

inline void validate_value(od::value v, std::string_view field, int depth = 0);

// validate_value for each member of `object` (which it consumes: reset() it to read it again).
inline void validate_members(od::object& object, std::string_view field, int depth = 0) {
  for (auto f : object) {
    od::field member;
    if (auto error = std::move(f).get(member))  // NOLINT(performance-move-const-arg): get() is rvalue-only
      throw_invalid_json(field, simdjson::error_message(error));
    od::value value = member.value();
    if (plain_string_length(member.key().raw()) == std::string_view::npos) {
      std::string_view key;
      if (auto error = member.unescaped_key().get(key)) throw_invalid_json(field, simdjson::error_message(error));
    }
    validate_value(value, field, depth + 1);
  }
}

// A whole small body (binding, preemption), read once to validate it, then rewound for the decoder.
inline void validate_document(od::document& doc) {
  od::value root;
  if (doc.get_value().get(root) == simdjson::SUCCESS) validate_value(root, "");
  doc.rewind();  // a root that is not an object or array: the decoder says what it expected
}

// Values validate_value has read on this thread: a measure of how much of the parser's index a body
// used (about two structural positions of 4 bytes per value), for WireDecoder::release_buffers_above.
// A thread-local, not a parameter: it would have to pass through every decoder of every object kind
// (the validation recurses through all of them) for one number read once per body.
inline thread_local size_t validated_values = 0;

inline void validate_value(od::value v, std::string_view field, int depth) {
  ++validated_values;
  if (depth > kMaxValidatedDepth)
    throw DecodeError(std::string(field), "JSON nested more than " + std::to_string(kMaxValidatedDepth) + " deep");
  auto check = [field](simdjson::error_code error) {
    if (error) throw_invalid_json(field, simdjson::error_message(error));
  };
  od::json_type type{};
  check(v.type().get(type));
  switch (type) {
    case od::json_type::object: {
      od::object object;
      check(v.get_object().get(object));
      validate_members(object, field, depth);
      break;
    }
    case od::json_type::array: {
      od::array array;
      check(v.get_array().get(array));
      for (auto element : array) {
        od::value item;
        check(std::move(element).get(item));  // NOLINT(performance-move-const-arg): get() is rvalue-only
        validate_value(item, field, depth + 1);
      }
      break;
    }
    case od::json_type::string: {
      std::string_view text;
      bool in_place = false;
      check(read_string(v, text, in_place));
      break;
    }
    case od::json_type::number:
      if (!is_json_number(v.raw_json_token())) throw_invalid_json(field, "malformed number");
      break;
    case od::json_type::boolean:
      if (!is_literal(v.raw_json_token(), "true") && !is_literal(v.raw_json_token(), "false"))
        throw_invalid_json(field, "malformed true or false");
      break;
    case od::json_type::null:
      if (!is_literal(v.raw_json_token(), "null")) throw_invalid_json(field, "malformed null");
      break;
  }
}

// After the top-level value: anything but white space left in the body is an error (simdjson 3.0's
// On Demand stops at the end of the first value and would silently ignore it).
inline void reject_trailing_content(od::document& doc) {
  const char* position = nullptr;
  const simdjson::error_code error = doc.current_location().get(position);
  if (error == simdjson::SUCCESS) throw DecodeError("", "trailing content after the JSON value");
  if (error != simdjson::OUT_OF_BOUNDS) throw_json_error("", error, "a JSON object");  // not at a clean end
}

}  // namespace gpu_extender::wire
