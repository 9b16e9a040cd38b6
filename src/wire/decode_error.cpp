#include "gpu_extender/wire/wire.h"

namespace gpu_extender {
namespace {
std::string compose(const std::string& field, const std::string& reason) {
  return field.empty() ? reason : field + ": " + reason;
}
}  // namespace

DecodeError::DecodeError(std::string field, const std::string& message)
    : std::runtime_error(compose(field, message)), field_(std::move(field)), reason_(message) {}

DecodeError& DecodeError::within(std::string_view outer) {
  if (field_.empty()) {
    field_ = std::string(outer);
  } else if (!field_.empty() && field_.front() == '[') {
    field_ = std::string(outer) + field_;
  } else {
    field_ = std::string(outer) + "." + field_;
  }
  static_cast<std::runtime_error&>(*this) = std::runtime_error(compose(field_, reason_));
  return *this;
}

}  // namespace gpu_extender
