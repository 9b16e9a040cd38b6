#pragma once
// Scaling raw scores (0..100) to the extender protocol's 0..10 (MaxExtenderPriority).
//
// Plain rounding of raw/10 would make 95 and 91 both 9: the scheduler could no longer tell a strictly
// better node from a worse one. The rule: start from round(raw / 10), then walk the distinct raw values
// from best to worst and keep every one strictly below the one before it; with at most 11 distinct
// values each keeps a distinct score (lower ones are lifted just enough to leave room), beyond 11 the
// worst ones share the bottom. Equal raw values always get equal scores. Thread-safe: pure function.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace gpu_extender {

inline constexpr int64_t kMaxExtenderPriority = 10;

// `order`: working space, kept by the caller across requests.
struct ScoreOrder {
  std::vector<double> best;    // the best distinct raw values (at most 64), best first
  std::vector<int64_t> score;  // and the score of each
  std::vector<std::pair<double, size_t>> by_value;  // when those cannot decide: every raw value and its node, best first
};
void scale_scores(std::span<const double> raw, std::vector<int64_t>& out, ScoreOrder& order);
inline void scale_scores(std::span<const double> raw, std::vector<int64_t>& out) {
  ScoreOrder order;
  scale_scores(raw, out, order);
}

// The other choice (policy key scoreScaling: proportional): the best node gets 10 and every other
// round(10 x raw / best), as kube-scheduler's DefaultNormalizeScore does; all 0 when the best is 0.
// Close inputs (31% against 32% utilisation) then round to the same score instead of deciding.
void scale_scores_proportionally(std::span<const double> raw, std::vector<int64_t>& out);

}  // namespace gpu_extender
