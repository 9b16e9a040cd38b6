#include <catch2/catch.hpp>

#include "gpu_extender/score_scaling.h"

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
