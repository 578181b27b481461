// The ziggurat normal (draw_normal in include/fleetsim/rng.h): its committed
// tables describe 256 layers of equal area under exp(-x^2/2); its draws have
// the normal's moments, tail probabilities and distribution function (KS and a
// fine-binned chi-square, tail beyond R included); and its bits are pinned, so
// a platform or change that alters any draw fails here first.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <vector>

#include "fleetsim/rng.h"
#include "tests/support/stats.h"

namespace fleetsim {
namespace {

using namespace normal_tables;

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

// The integral of exp(-x^2/2) from x to infinity.
double upper(double x) { return std::sqrt(std::numbers::pi / 2) * std::erfc(x / std::numbers::sqrt2); }

// Layer k's outer edge x[k] (x[1] = R), from the tables: kWidth[k] = x[k] * 2^-53.
double edge(int k) { return k == kLayers ? 0.0 : kWidth[k] * 0x1.0p53; }

TEST(NormalTables, LayersHaveEqualAreaAndMeetTheDensity) {
  EXPECT_EQ(edge(1), kR);
  EXPECT_NEAR(kR * std::exp(-kR * kR / 2) + upper(kR), kV, 1e-15);  // base strip plus tail
  EXPECT_NEAR(kWidth[0] * 0x1.0p53 * kF[0], kV, 1e-15);
  EXPECT_EQ(kF[kLayers], 1.0);
  EXPECT_EQ(kAccept[kLayers - 1], 0u);  // the top layer is all wedge
  for (int k = 1; k < kLayers; ++k) {
    EXPECT_GT(edge(k), edge(k + 1)) << k;
    EXPECT_NEAR(kF[k], std::exp(-edge(k) * edge(k) / 2), 1e-15) << k;
    EXPECT_NEAR(edge(k) * (kF[k + 1] - kF[k]), kV, 1e-14) << "layer " << k;  // the rectangle's area
    EXPECT_NEAR(static_cast<double>(kAccept[k]), edge(k + 1) / edge(k) * 0x1.0p53, 2.0) << k;
  }
}

std::vector<double> sample(uint64_t seed, int n) {
  const uint64_t s = stream_seed(seed, 0, Stream::kComputeJitter);
  std::vector<double> z(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) z[static_cast<size_t>(i)] = draw_normal(s, static_cast<uint64_t>(i));
  return z;
}

constexpr int kN = 1 << 22;

TEST(NormalDraw, MomentsOfTheNormal) {
  const auto z = sample(3, kN);
  double m1 = 0, m2 = 0, m3 = 0, m4 = 0;
  for (double x : z) {
    m1 += x;
    m2 += x * x;
    m3 += x * x * x;
    m4 += x * x * x * x;
  }
  const double n = kN;
  // Tolerances: 5 standard errors (sd 1/sqrt(n), sqrt(2/n), sqrt(15/n), sqrt(96/n)).
  EXPECT_NEAR(m1 / n, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(m2 / n, 1.0, 5 * std::sqrt(2 / n));
  EXPECT_NEAR(m3 / n, 0.0, 5 * std::sqrt(15 / n));
  EXPECT_NEAR(m4 / n, 3.0, 5 * std::sqrt(96 / n));
}

// P(|Z| > t) at t = 1, 2, 3, R (where the tail method takes over), 4 and 4.5,
// each within 5 binomial standard errors; both signs equally often beyond R.
TEST(NormalDraw, TailProbabilities) {
  const auto z = sample(5, kN);
  for (double t : {1.0, 2.0, 3.0, kR, 4.0, 4.5}) {
    const double p = 2 * normal_cdf(-t);
    const double hits = static_cast<double>(std::count_if(z.begin(), z.end(), [t](double x) { return std::fabs(x) > t; }));
    EXPECT_NEAR(hits, p * kN, 5 * std::sqrt(p * (1 - p) * kN) + 1) << "t = " << t;
  }
  const auto above = std::count_if(z.begin(), z.end(), [](double x) { return x > kR; });
  const auto below = std::count_if(z.begin(), z.end(), [](double x) { return x < -kR; });
  EXPECT_NEAR(static_cast<double>(above - below), 0.0, 5 * std::sqrt(static_cast<double>(above + below)));
}

using test_support::ks_scaled;

// KS against the normal CDF over 4M draws, and over the draws beyond R against
// the tail's own law (1 - upper(x) / upper(R)). sqrt(n) D > 2.23 has p = 1e-4.
TEST(NormalDraw, KolmogorovSmirnovAgainstTheNormal) {
  const auto z = sample(7, kN);
  EXPECT_LT(ks_scaled(z, normal_cdf), 2.23);
  std::vector<double> tail;
  for (double x : z)
    if (std::fabs(x) > kR) tail.push_back(std::fabs(x));
  ASSERT_GT(tail.size(), 800u);
  EXPECT_LT(ks_scaled(tail, [](double x) { return 1 - upper(x) / upper(kR); }), 2.23);
}

// 200 bins of width 0.05 over [-5, 5] plus the two outer ones: a ziggurat with
// a wrong layer shows as a step at that layer's edge. Chi-square with 201
// degrees, as a Wilson-Hilferty z-score.
TEST(NormalDraw, FineBinnedChiSquare) {
  const auto z = sample(9, kN);
  std::vector<double> count(202, 0);
  for (double x : z) count[static_cast<size_t>(std::clamp(std::floor((x + 5) / 0.05) + 1, 0.0, 201.0))] += 1;
  double chi2 = 0;
  for (size_t b = 0; b < count.size(); ++b) {
    const double lo = b == 0 ? -INFINITY : -5 + 0.05 * static_cast<double>(b - 1);
    const double hi = b == 201 ? INFINITY : -5 + 0.05 * static_cast<double>(b);
    const double e = (normal_cdf(hi) - normal_cdf(lo)) * kN;
    chi2 += (count[b] - e) * (count[b] - e) / e;
  }
  const double k = 201;
  EXPECT_LT((std::cbrt(chi2 / k) - (1 - 2 / (9 * k))) / std::sqrt(2 / (9 * k)), 4.0) << "chi2 " << chi2;
}

// The draws' exact bits, fast path, wedges and tail together: a hash of 2^20
// draws and three single values. They change only with the sampler, its tables
// or the stream derivation (then update them), or on a platform whose exp/log
// differ in the last place exactly where a wedge or tail test is decided.
TEST(NormalDraw, BitsArePinned) {
  const uint64_t s = stream_seed(1, 0, Stream::kComputeJitter);
  uint64_t h = 0;
  for (uint64_t c = 0; c < (1u << 20); ++c) h = mix64(h ^ std::bit_cast<uint64_t>(draw_normal(s, c)));
  EXPECT_EQ(h, 0xfd88febea61aa3f1ULL);
  EXPECT_EQ(std::bit_cast<uint64_t>(draw_normal(s, 0)), 0xbfa687bfff398655ULL);  // -0.0440044402173611
  EXPECT_EQ(std::bit_cast<uint64_t>(draw_normal(s, 1)), 0x3fd648d283cf33caULL);  // 0.348194721908666
  EXPECT_EQ(std::bit_cast<uint64_t>(draw_normal(s, 2)), 0xbfbb1e1dd32cca17ULL);  // -0.105928291374575
}

}  // namespace
}  // namespace fleetsim
