// Closed forms of the expected maximum: the reference's c_N table, its Gumbel
// refinement, and distributions whose maxima have known exact values.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/sweep/order_stats.h"

namespace fleetsim {
namespace {

// c_N by numerical integration matches docs/straggler-tax.md's values to two decimals.
TEST(OrderStats, NormalMaxMatchesReferenceTable) {
  const std::pair<int64_t, double> rows[] = {{8, 1.42}, {64, 2.34}, {1024, 3.25}, {4096, 3.63}, {16384, 3.97}};
  for (const auto& [n, c] : rows) EXPECT_NEAR(normal_max_exact(n), c, 0.005) << n;
  EXPECT_NEAR(normal_max_exact(1), 0.0, 1e-9);
  EXPECT_NEAR(normal_max_exact(2), 1 / std::sqrt(std::acos(-1.0)), 1e-9);  // E[max of 2] = 1/sqrt(pi)
}

// The Gumbel refinement reproduces the reference's row (1.52, 2.40, 3.28, 3.65, 3.99).
TEST(OrderStats, NormalGumbelMatchesReferenceRow) {
  const std::pair<int64_t, double> rows[] = {{8, 1.52}, {64, 2.40}, {1024, 3.28}, {4096, 3.65}, {16384, 3.99}};
  for (const auto& [n, c] : rows) EXPECT_NEAR(normal_max_gumbel(n), c, 0.005) << n;
}

// Gamma with cv 100% is the exponential: E[max of N] = H_N, the harmonic number.
TEST(OrderStats, ExponentialMaxIsHarmonicNumber) {
  Jitter j;
  j.dist = JitterDist::kGamma;
  j.cv = 1.0;
  for (int64_t n : {1, 8, 1000}) {
    double h = 0;
    for (int64_t k = 1; k <= n; ++k) h += 1.0 / static_cast<double>(k);
    EXPECT_NEAR(expected_max(j, n), h, 1e-6 * h) << n;
  }
}

// An empirical distribution with two knots is uniform: E[max of N] = lo + (hi - lo) N / (N + 1).
TEST(OrderStats, EmpiricalUniformMaxIsExact) {
  Jitter j;
  j.dist = JitterDist::kEmpirical;
  j.samples = {0.5, 1.5};
  for (int64_t n : {1, 7, 4096}) EXPECT_NEAR(expected_max(j, n), 0.5 + static_cast<double>(n) / (static_cast<double>(n) + 1.0), 1e-12);
}

// A lognormal with a small cv is nearly normal; its mean is 1 (N = 1) and its maximum grows with N.
TEST(OrderStats, LognormalIsCloseToNormalAtSmallCv) {
  Jitter ln;
  ln.dist = JitterDist::kLognormal;
  ln.cv = 0.02;
  Jitter nm;
  nm.cv = 0.02;
  EXPECT_NEAR(expected_max(ln, 1), 1.0, 1e-7);
  for (int64_t n : {64, 16384}) {
    EXPECT_NEAR(expected_max(ln, n), expected_max(nm, n), 0.004) << n;
    EXPECT_GT(expected_max(ln, n), expected_max(nm, n));  // right-skewed
    EXPECT_NEAR(gumbel_max(ln, n), expected_max(ln, n), 0.004) << n;
  }
}

}  // namespace
}  // namespace fleetsim
