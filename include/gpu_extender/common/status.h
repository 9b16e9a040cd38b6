#pragma once
// How an operation that a person may need to hear about reports its end: done, or why not, in words
// meant for a log line or an extender answer's Error. One type for it in every layer above the wire
// (the decoders throw DecodeError, the policy loader PolicyError: see docs/development.md, "Layout").
//
// [[nodiscard]]: a Status dropped on the floor is a failure nobody hears of.
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

}  // namespace gpu_extender
