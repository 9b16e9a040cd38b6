#include "gpu_extender/policy/score_scaling.h"

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

// The best distinct values of `raw`, best first, at most `keep` of them, into `best`; true when they
// are all of raw's values. Raw scores often take few values (a node's free GPUs, its share of use):
// those are gathered whole in a small sorted list, n log d, instead of sorting all n. When they take
// many (a utilisation per node), only the best matter: scores fall by at least one a level from 10,
// so past the 11th level every node gets 0 (see scale_scores).
bool best_distinct_values(std::span<const double> raw, size_t keep, std::vector<double>& best) {
  best.clear();
  bool all = true;
  for (double value : raw) {
    value = comparable(value);
    if (!best.empty() && value == best.front()) continue;  // often: many nodes share the best score
    if (best.size() == keep && value < best.back()) {  // most values, once the list is full
      all = false;
      continue;
    }
    const auto at = std::lower_bound(best.begin(), best.end(), value, std::greater<>());
    if (at != best.end() && *at == value) continue;
    const auto place = at - best.begin();
    if (best.size() == keep) {
      best.pop_back();
      all = false;
    }
    best.insert(best.begin() + place, value);
  }
  return all;
}

// How many levels sorted values (best first) make: values further apart than kSameScore.
template <typename Value>
size_t count_levels(size_t count, const Value& value) {
  size_t levels = 1;
  for (size_t k = 1; k < count; ++k)
    if (value(k - 1) - value(k) > kSameScore) ++levels;
  return levels;
}

// Walks values best first (value(k) for k in 0..count, non-increasing) and calls assign(k, score) for
// each: the scaling rule of score_scaling.h.
template <typename Value, typename Assign>
void assign_scores(size_t count, const Value& value, const Assign& assign) {
  const size_t levels = count_levels(count, value);
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

// Scores `raw` from its best distinct values alone, when they can decide (false otherwise). Scores
// fall by at least one a level from 10 when there are more than 11 levels in all, so a value below
// the 11th level scores 0: the best values decide alone when they are all the values, or hold 12
// levels already (their own count then also says "more than 11", as the whole would).
bool scale_from_best_values(std::span<const double> raw, size_t keep, std::vector<int64_t>& out, ScoreOrder& order) {
  const std::vector<double>& best = order.best;
  const bool all = best_distinct_values(raw, keep, order.best);
  constexpr size_t kDecidingLevels = kMaxExtenderPriority + 2;
  const auto best_value = [&](size_t k) { return best[k]; };
  if (!all && count_levels(best.size(), best_value) < kDecidingLevels) return false;
  order.score.assign(best.size(), 0);
  assign_scores(best.size(), best_value, [&](size_t k, int64_t score) { order.score[k] = score; });
  // Scores do not rise as values fall: only the values down to the last one scoring above 0 need
  // looking up, among those few; anything lower (or not kept at all) scores 0.
  const auto scoring =
      static_cast<std::ptrdiff_t>(std::find(order.score.begin(), order.score.end(), 0) - order.score.begin());
  if (scoring == 0) return true;
  const double lowest_scoring = best[static_cast<size_t>(scoring - 1)];
  for (size_t i = 0; i < raw.size(); ++i) {
    const double value = comparable(raw[i]);
    if (value < lowest_scoring) continue;
    if (value == best.front()) {
      out[i] = order.score.front();
      continue;
    }
    const auto at = std::lower_bound(best.begin() + 1, best.begin() + scoring, value, std::greater<>());
    out[i] = order.score[static_cast<size_t>(at - best.begin())];
  }
  return true;
}

}  // namespace

void scale_scores(std::span<const double> raw, std::vector<int64_t>& out, ScoreOrder& order) {
  out.assign(raw.size(), 0);
  if (raw.empty()) return;
  // The 16 best values almost always decide (the fewer kept, the fewer values reach the list); 64 when
  // near-ties (floating-point noise) fill them.
  if (scale_from_best_values(raw, 16, out, order) || scale_from_best_values(raw, 64, out, order)) return;
  // The best values are a chain of near-ties (each within kSameScore of the next) with fewer than 12
  // levels: sort them all, next to their index, in one contiguous array.
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
