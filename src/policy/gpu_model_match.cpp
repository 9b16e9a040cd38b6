#include "gpu_extender/policy/gpu_model_match.h"

#include "common/case_insensitive.h"

namespace gpu_extender::rules {
namespace {

// The next non-empty dash-separated token of `text` (consumed), or "" at the end.
std::string_view next_token(std::string_view& text) {
  while (!text.empty()) {
    const size_t dash = text.find('-');
    const std::string_view token = text.substr(0, dash);
    text.remove_prefix(dash == std::string_view::npos ? text.size() : dash + 1);
    if (!token.empty()) return token;
  }
  return {};
}

// The model part of a GPU Feature Discovery product name: without "-SHARED" and "-MIG-<profile>".
std::string_view model_part(std::string_view product) {
  std::string_view rest = product;
  size_t offset = 0;
  while (!rest.empty()) {
    const std::string_view token = next_token(rest);
    const size_t end = product.size() - rest.size();
    if (equals_ignore_case(token, "MIG") || (equals_ignore_case(token, "SHARED") && rest.empty())) {
      product = product.substr(0, offset);
      break;
    }
    offset = end;
  }
  while (!product.empty() && product.back() == '-') product.remove_suffix(1);
  return product;
}

}  // namespace

bool gpu_model_matches(std::string_view wanted, std::string_view node_model) {
  std::string_view node = model_part(node_model);
  bool any = false;
  for (std::string_view token = next_token(wanted); !token.empty(); token = next_token(wanted)) {
    any = true;
    std::string_view candidate;
    do {
      candidate = next_token(node);
    } while (!candidate.empty() && !equals_ignore_case(candidate, token));
    if (candidate.empty()) return false;  // not there, or not after the tokens matched before it
  }
  return any;
}

}  // namespace gpu_extender::rules
