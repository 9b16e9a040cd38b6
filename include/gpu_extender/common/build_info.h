#pragma once
// Facts fixed at build time. Thread-safe: all return views of static storage.
#include <string_view>

namespace gpu_extender {

std::string_view version();
std::string_view git_commit();
// The text of extender-config/policy.yaml as it was when the binary was built.
std::string_view default_policy_text();

}  // namespace gpu_extender
