#pragma once
// Internal helpers over simdjson On Demand: turn its error codes into DecodeErrors that name the field.
// Only the wire decoders include this (simdjson is a heavy header).
#include <simdjson.h>

#include <string>
#include <string_view>

#include "gpu_extender/wire.h"

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

inline std::string_view take_string(simdjson::simdjson_result<od::value> v, std::string_view field) {
  return take(v.get_string(), field, "a string");
}

inline std::string_view field_key(simdjson::simdjson_result<od::field>& f, std::string_view where) {
  return take(f.unescaped_key(), where, "an object key");
}

// True when the value is JSON null (and consumes it); false leaves the value for the caller.
inline bool take_null(od::value& v, std::string_view field) {
  bool is_null = false;
  if (auto error = v.is_null().get(is_null)) throw_json_error(field, error, "a value");
  return is_null;
}

// After the top-level value: anything but white space left in the body is an error (simdjson 3.0's
// On Demand stops at the end of the first value and would silently ignore it).
inline void reject_trailing_content(od::document& doc) {
  const char* position = nullptr;
  if (doc.current_location().get(position) == simdjson::SUCCESS) {
    throw DecodeError("", "trailing content after the JSON value");
  }
}

}  // namespace gpu_extender::wire
