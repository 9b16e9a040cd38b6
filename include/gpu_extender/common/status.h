#pragma once
// How an operation that a person may need to hear about reports its end: done, or why not, in words
// meant for a log line or an extender answer's Error; and Result<T>, the same for an operation that
// gives a value when it is done. One pair for it in every layer above the wire (the decoders throw
// DecodeError, the policy loader PolicyError: see docs/development.md, "Layout"), so no call reports
// its failure through a string out-parameter.
//
// [[nodiscard]]: a Status dropped on the floor is a failure nobody hears of.
#include <optional>
#include <string>
#include <utility>

namespace gpu_extender {

class [[nodiscard]] Status {
 public:
  static Status done() { return Status(); }
  static Status failed(std::string why) { return Status(std::move(why)); }

  bool ok() const { return why_.empty(); }
  // Why it failed; "" when it did not.
  const std::string& why() const { return why_; }

 private:
  Status() = default;
  explicit Status(std::string why) : why_(why.empty() ? "failed (no reason given)" : std::move(why)) {}
  std::string why_;
};

// A value, or why there is none. Made from either (`return value;`, `return Status::failed(why);`);
// value() only when ok().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor): `return value;`
  Result(Status failure) : status_(std::move(failure)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Status::failed("");  // a Result without a value always says why
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const std::string& why() const { return status_.why(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_ = Status::done();
};

}  // namespace gpu_extender
