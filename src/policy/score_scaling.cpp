#include "gpu_extender/score_scaling.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace gpu_extender {
namespace {
// Raw scores closer than this are the same score (floating-point noise of the weighted mean).
constexpr double kSameScore = 1e-9;

// A raw score as scaling reads it: NaN (no scorer should give one) as 0, so that it has a place in
// the order.
double comparable(double raw) { return std::isnan(raw) ? 0.0 : raw; }

// The distinct values of `raw`, best first, into `distinct`, when there are at most kFewValues of them
// (false otherwise). Raw scores often take few values (a node's free GPUs, its share of use): they are
// gathered in a small sorted list, n log d, instead of sorting all n.
constexpr size_t kFewValues = 64;
bool few_distinct_values(std::span<const double> raw, std::vector<double>& distinct) {
  distinct.clear();
  for (double value : raw) {
    value = comparable(value);
    auto at = std::lower_bound(distinct.begin(), distinct.end(), value, std::greater<>());
    if (at != distinct.end() && *at == value) continue;
    if (distinct.size() == kFewValues) return false;
    distinct.insert(at, value);
  }
  return true;
}

// Walks values best first (value(k) for k in 0..count, non-increasing) and calls assign(k, score) for
// each: the scaling rule of score_scaling.h.
template <typename Value, typename Assign>
void assign_scores(size_t count, const Value& value, const Assign& assign) {
  size_t levels = 1;  // values further apart than kSameScore
  for (size_t k = 1; k < count; ++k)
    if (value(k - 1) - value(k) > kSameScore) ++levels;
  int64_t previous = kMaxExtenderPriority + 1;
  size_t level = 0;
  for (size_t k = 0; k < count;) {
    const double top = value(k);
    const int64_t proportional = std::clamp<int64_t>(std::llround(top / 10.0), 0, kMaxExtenderPriority);
    const int64_t floor_for_rest =
        levels <= static_cast<size_t>(kMaxExtenderPriority + 1) ? static_cast<int64_t>(levels - 1 - level) : 0;
    const int64_t score = std::max<int64_t>(0, std::max(floor_for_rest, std::min(proportional, previous - 1)));
    // Everything within kSameScore below the group's first value gets the same score.
    while (k < count && top - value(k) <= kSameScore) assign(k++, score);
    previous = score;
    ++level;
  }
}

}  // namespace

void scale_scores(std::span<const double> raw, std::vector<int64_t>& out, ScoreOrder& order) {
  out.assign(raw.size(), 0);
  if (raw.empty()) return;
  if (few_distinct_values(raw, order.distinct)) {
    const std::vector<double>& distinct = order.distinct;
    order.score.assign(distinct.size(), 0);
    assign_scores(
        distinct.size(), [&](size_t k) { return distinct[k]; }, [&](size_t k, int64_t score) { order.score[k] = score; });
    for (size_t i = 0; i < raw.size(); ++i) {
      const auto at = std::lower_bound(distinct.begin(), distinct.end(), comparable(raw[i]), std::greater<>());
      out[i] = order.score[static_cast<size_t>(at - distinct.begin())];
    }
    return;
  }
  // Many values (a utilisation per node): sort them all, next to their index, in one contiguous array.
  auto& sorted = order.by_value;
  sorted.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) sorted[i] = {comparable(raw[i]), i};
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  assign_scores(
      sorted.size(), [&](size_t k) { return sorted[k].first; }, [&](size_t k, int64_t score) { out[sorted[k].second] = score; });
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
