// Reported GPU memory judged as the size it is sold with: see gpu_memory_size.h.
#include "gpu_extender/policy/gpu_memory_size.h"

#include <algorithm>

namespace gpu_extender {

int64_t judged_gpu_memory_mib(int64_t reported_mib, std::span<const int64_t> sizes_gib) {
  const auto size = std::find_if(sizes_gib.begin(), sizes_gib.end(),
                                 [&](int64_t gib) { return gib * 1024 >= reported_mib; });
  if (size == sizes_gib.end()) return reported_mib;
  const int64_t sold_mib = *size * 1024;
  return static_cast<double>(reported_mib) >= kReportedFraction * static_cast<double>(sold_mib) ? sold_mib
                                                                                                : reported_mib;
}

int64_t lowest_reported_mib(int64_t wanted_mib, std::span<const int64_t> sizes_gib) {
  if (wanted_mib <= 0) return wanted_mib;
  // judged(r) >= r, so the answer is at most wanted; judged is monotone, so search [0, wanted].
  int64_t low = 0, high = wanted_mib;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    if (judged_gpu_memory_mib(mid, sizes_gib) >= wanted_mib) high = mid;
    else low = mid + 1;
  }
  return low;
}

int64_t mig_profile_gib(std::string_view profile) {
  // "<compute>g.<memory>gb", optionally followed by "+me" and the like: the digits before "gb".
  const size_t gb = profile.find("gb");
  if (gb == std::string_view::npos) return 0;
  size_t start = gb;
  while (start > 0 && profile[start - 1] >= '0' && profile[start - 1] <= '9') --start;
  if (start == gb || start == 0 || profile[start - 1] != '.') return 0;
  int64_t gib = 0;
  for (size_t i = start; i < gb; ++i) gib = gib * 10 + (profile[i] - '0');
  return gib;
}

}  // namespace gpu_extender
