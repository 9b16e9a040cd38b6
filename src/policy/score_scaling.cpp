#include "gpu_extender/score_scaling.h"

#include <algorithm>
#include <cmath>

namespace gpu_extender {
namespace {
// Raw scores closer than this are the same score (floating-point noise of the weighted mean).
constexpr double kSameScore = 1e-9;
}  // namespace

void scale_scores(std::span<const double> raw, std::vector<int64_t>& out, ScoreOrder& order) {
  out.assign(raw.size(), 0);
  if (raw.empty()) return;
  // Values next to their index, best first: sorting the pairs themselves keeps the comparisons in
  // one contiguous array.
  order.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) order[i] = {raw[i], i};
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });

  size_t distinct = 1;
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i - 1].first - order[i].first > kSameScore) ++distinct;

  int64_t previous = kMaxExtenderPriority + 1;
  size_t level = 0;
  for (size_t i = 0; i < order.size();) {
    const double value = order[i].first;
    const int64_t proportional =
        std::clamp<int64_t>(std::llround(value / 10.0), 0, kMaxExtenderPriority);
    const int64_t floor_for_rest =
        distinct <= static_cast<size_t>(kMaxExtenderPriority + 1) ? static_cast<int64_t>(distinct - 1 - level) : 0;
    const int64_t score = std::max<int64_t>(0, std::max(floor_for_rest, std::min(proportional, previous - 1)));
    // Everything equal to this value gets the same score.
    while (i < order.size() && value - order[i].first <= kSameScore) out[order[i++].second] = score;
    previous = score;
    ++level;
  }
}

void scale_scores_proportionally(std::span<const double> raw, std::vector<int64_t>& out) {
  out.assign(raw.size(), 0);
  double best = 0;
  for (double value : raw) best = std::max(best, value);
  if (best <= 0) return;
  for (size_t i = 0; i < raw.size(); ++i)
    out[i] = std::clamp<int64_t>(std::llround(static_cast<double>(kMaxExtenderPriority) * raw[i] / best), 0,
                                 kMaxExtenderPriority);
}

}  // namespace gpu_extender
