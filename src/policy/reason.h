#pragma once
// Builds a predicate's refusal reason in place. The buffer is the node's verdict, reused from one
// request to the next, so that refusing 4,500 of 5,000 nodes allocates nothing in steady state (the
// temporaries of `"a" + x + "b"` were most of the names-mode filter's time).
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "gpu_extender/policy/policy.h"
#include "gpu_extender/common/quantity.h"

namespace gpu_extender::rules {

struct Milli {  // a milli-unit amount, written as Kubernetes writes quantities ("1.5", "4")
  int64_t value;
};

inline void append_piece(std::string& out, std::string_view text) { out.append(text); }
inline void append_piece(std::string& out, int64_t number) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, number).ptr);
}
inline void append_piece(std::string& out, Milli amount) { append_milli(out, amount.value); }

// Appends every piece to `reason` and returns `fit`: `return refuse(reason, Fit::kResolvable, "only ", n, ...)`.
template <typename... Pieces>
Fit refuse(std::string& reason, Fit fit, const Pieces&... pieces) {
  (append_piece(reason, pieces), ...);
  return fit;
}

}  // namespace gpu_extender::rules
