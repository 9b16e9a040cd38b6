#pragma once
// Timing helpers for the benchmarks: warm-up, repeated runs within a time budget, medians.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

struct Timing {
  double median_ms = 0;
  double p90_ms = 0;
  double min_ms = 0;
  size_t runs = 0;
};

inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

// Median, p90 and minimum of timed samples (at least one).
inline Timing summarize(const std::vector<double>& samples) {
  Timing t;
  t.median_ms = percentile(samples, 0.5);
  t.p90_ms = percentile(samples, 0.9);
  t.min_ms = *std::min_element(samples.begin(), samples.end());
  t.runs = samples.size();
  return t;
}

// Runs `fn` once to warm up, then repeatedly until `budget_ms` is spent (at least `min_runs` times).
inline Timing measure(const std::function<void()>& fn, double budget_ms = 1500, size_t min_runs = 7,
                      size_t max_runs = 2000) {
  using clock = std::chrono::steady_clock;
  fn();
  std::vector<double> samples;
  const auto start = clock::now();
  while (samples.size() < max_runs) {
    const auto t0 = clock::now();
    fn();
    samples.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    const double spent = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    if (samples.size() >= min_runs && spent > budget_ms) break;
  }
  return summarize(samples);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace bench
