#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "gpu_extender/policy/score_scaling.h"

using gpu_extender::scale_scores;
using gpu_extender::scale_scores_proportionally;

static std::vector<int64_t> scaled(std::vector<double> raw) {
  std::vector<int64_t> out;
  scale_scores(raw, out);
  return out;
}

TEST_CASE("scaling: proportional where rounding keeps the order") {
  CHECK(scaled({100, 50, 0}) == std::vector<int64_t>{10, 5, 0});
  CHECK(scaled({}).empty());
  CHECK(scaled({42}) == std::vector<int64_t>{4});
}

TEST_CASE("scaling: a strictly better node never ties with a worse one (up to 11 levels)") {
  CHECK(scaled({95, 91}) == std::vector<int64_t>{10, 9});
  CHECK(scaled({86, 85, 84}) == std::vector<int64_t>{9, 8, 7});
  CHECK(scaled({3, 2, 1}) == std::vector<int64_t>{2, 1, 0});
  std::vector<double> eleven;
  for (int i = 0; i < 11; ++i) eleven.push_back(50 + i * 0.1);
  const auto out = scaled(eleven);
  for (size_t i = 1; i < out.size(); ++i) CHECK(out[i] > out[i - 1]);
}

TEST_CASE("scaling: equal raw scores get equal scores, all stay in 0..10") {
  const auto out = scaled({70, 70, 20, 70});
  CHECK(out[0] == out[1]);
  CHECK(out[1] == out[3]);
  CHECK(out[0] > out[2]);
  std::vector<double> many;
  for (int i = 0; i < 300; ++i) many.push_back(i / 3.0);
  const auto wide = scaled(many);
  for (size_t i = 0; i < wide.size(); ++i) {
    CHECK((wide[i] >= 0 && wide[i] <= 10));
    if (i) CHECK(wide[i] >= wide[i - 1]);  // order kept, ties only at the bottom
  }
  CHECK(wide.back() > wide[wide.size() - 2]);
}

TEST_CASE("scaling, proportional: best 10, the others in proportion, close inputs tie") {
  std::vector<int64_t> out;
  scale_scores_proportionally(std::vector<double>{69, 68, 50, 0}, out);
  CHECK(out == std::vector<int64_t>{10, 10, 7, 0});  // 68/69 rounds to 10: noise does not decide
  scale_scores_proportionally(std::vector<double>{0, 0}, out);
  CHECK(out == std::vector<int64_t>{0, 0});
  scale_scores_proportionally({}, out);
  CHECK(out.empty());
}

namespace {
// The rule as first written (sort every node, walk the sorted list): what the faster scale_scores
// must keep giving.
std::vector<int64_t> scaled_by_sorting_all(const std::vector<double>& raw) {
  std::vector<int64_t> out(raw.size(), 0);
  if (raw.empty()) return out;
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < raw.size(); ++i) order.emplace_back(raw[i], i);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  size_t distinct = 1;
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i - 1].first - order[i].first > 1e-9) ++distinct;
  int64_t previous = 11;
  size_t level = 0;
  for (size_t i = 0; i < order.size();) {
    const double value = order[i].first;
    const int64_t proportional = std::clamp<int64_t>(std::llround(value / 10.0), 0, 10);
    const int64_t floor_for_rest = distinct <= 11 ? static_cast<int64_t>(distinct - 1 - level) : 0;
    const int64_t score = std::max<int64_t>(0, std::max(floor_for_rest, std::min(proportional, previous - 1)));
    while (i < order.size() && value - order[i].first <= 1e-9) out[order[i++].second] = score;
    previous = score;
    ++level;
  }
  return out;
}
}  // namespace

TEST_CASE("scaling: the same scores as sorting every node, for few and for many distinct values") {
  std::mt19937 random(7);
  for (int round = 0; round < 400; ++round) {
    const size_t nodes = 1 + random() % 300;
    const size_t values = 1 + random() % (round % 2 ? 8 : 200);  // few distinct values, or many
    std::vector<double> raw;
    for (size_t i = 0; i < nodes; ++i) {
      double v = static_cast<double>(random() % values) * (100.0 / static_cast<double>(values));
      if (random() % 5 == 0) v += 1e-10 * static_cast<double>(random() % 3);  // within noise of another
      raw.push_back(v);
    }
    INFO("round " << round);
    CHECK(scaled(raw) == scaled_by_sorting_all(raw));
  }
}

TEST_CASE("scaling: many distinct values, in any order, score as sorting every node does") {
  std::mt19937 random(11);
  for (int round = 0; round < 60; ++round) {
    const size_t nodes = 100 + random() % 3000;
    std::vector<double> raw;
    for (size_t i = 0; i < nodes; ++i) raw.push_back(static_cast<double>(random() % 100000) / 1000.0);
    if (round % 3 == 1) std::sort(raw.begin(), raw.end());  // every value a new best: the kept list churns
    if (round % 3 == 2) std::sort(raw.begin(), raw.end(), std::greater<>());
    INFO("round " << round);
    CHECK(scaled(raw) == scaled_by_sorting_all(raw));
  }
}

TEST_CASE("scaling: when the best distinct values hold few levels, the rest still score as sorting every node does") {
  // 11 levels, each of 10 values within noise of one another: 110 distinct values, of which the 64
  // best hold only 7 levels. The whole has 11, so every level keeps a score of its own: 10 down to 0.
  std::vector<double> raw;
  for (int level = 0; level < 11; ++level)
    for (int k = 0; k < 10; ++k)
      for (int copies = 0; copies < 3; ++copies) raw.push_back(100.0 - 9.0 * level - 1e-11 * k);
  std::shuffle(raw.begin(), raw.end(), std::mt19937(3));
  const std::vector<int64_t> expected = scaled_by_sorting_all(raw);
  CHECK(scaled(raw) == expected);
  CHECK(std::set<int64_t>(expected.begin(), expected.end()).size() == 11);
}

TEST_CASE("scaling: a NaN raw score counts as 0 instead of breaking the order") {
  CHECK(scaled({100, std::nan(""), 0}) == scaled({100, 0, 0}));
}

// The ordered rule, stated as a search instead of a walk: over every assignment of scores 0..10 to
// the distinct raw values that keeps them strictly apart (possible for up to 11 levels), the one
// closest to round(raw / 10), the best value's distance first, then the next one's, and so on.
static std::vector<int64_t> closest_strict_assignment(const std::vector<double>& raw) {
  std::vector<double> levels(raw);
  std::sort(levels.rbegin(), levels.rend());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  const size_t k = levels.size();
  std::vector<int64_t> best_scores;
  std::vector<int64_t> best_distance;
  // Every strictly decreasing choice of k scores from 0..10: a bit mask of the scores used.
  for (uint32_t mask = 0; mask < (1U << 11); ++mask) {
    if (static_cast<size_t>(__builtin_popcount(mask)) != k) continue;
    std::vector<int64_t> scores;
    for (int s = 10; s >= 0; --s)
      if (mask & (1U << s)) scores.push_back(s);
    std::vector<int64_t> distance;
    for (size_t i = 0; i < k; ++i) distance.push_back(std::abs(scores[i] - std::llround(levels[i] / 10)));
    if (best_scores.empty() || distance < best_distance) {
      best_scores = scores;
      best_distance = distance;
    }
  }
  std::vector<int64_t> out;
  for (double v : raw) out.push_back(best_scores[static_cast<size_t>(std::find(levels.begin(), levels.end(), v) - levels.begin())]);
  return out;
}

TEST_CASE("scaling: the same scores as a search over every strictly ordered assignment") {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    const size_t distinct = 1 + rng() % 6;
    std::vector<double> values;
    for (size_t i = 0; i < distinct; ++i) values.push_back(static_cast<double>(rng() % 1001) / 10.0);  // 0.0..100.0
    std::vector<double> raw;
    for (size_t n = 0; n < distinct + rng() % 4; ++n) raw.push_back(values[rng() % values.size()]);
    INFO("raw " << Catch::Detail::stringify(raw));
    CHECK(scaled(raw) == closest_strict_assignment(raw));
  }
}
