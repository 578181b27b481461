// Independence of the random streams (include/fleetsim/rng.h) across seeds,
// ranks and purposes: no two (seed, rank, purpose) share a stream, paired
// streams are uncorrelated, each seed's uniforms and normals fit their laws,
// and replicas at neighbouring seeds (a sweep's job.seed + i) behave as
// independent runs. Every check is a fixed computation over fixed seeds, so the
// tests are deterministic; thresholds sit near p = 1e-4 or beyond.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <unordered_set>
#include <vector>

#include "fleetsim/rng.h"
#include "tests/support/stats.h"

namespace fleetsim {
namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

using test_support::ks_scaled;

// sqrt(n) D exceeds 1.95 with probability 0.001 and 2.23 with 1e-4 (Kolmogorov's law).
constexpr double kKs1e4 = 2.23;

// Pearson correlation of two equally long samples.
double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) { ma += a[i] / n; mb += b[i] / n; }
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

std::vector<double> normals(uint64_t seed, uint64_t rank, Stream purpose, int n, uint64_t first = 0) {
  const uint64_t s = stream_seed(seed, rank, purpose);
  std::vector<double> z(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) z[static_cast<size_t>(i)] = draw_normal(s, first + static_cast<uint64_t>(i));
  return z;
}

// The old derivation mix(mix(seed) ^ mix(rank*K+1) ^ mix(purpose*L+7)) gave seed
// K+1's rank 0 exactly the stream of seed 1's rank 1 (and swapped every
// (K*a+1, b) with (K*b+1, a)); entering the arguments in turn cannot.
TEST(RngStreams, NoSwappedArgumentsShareAStream) {
  constexpr uint64_t kOldRankMul = 0x632be59bd9b4e019ULL;
  for (uint64_t a = 0; a < 8; ++a) {
    for (uint64_t b = 0; b < 8; ++b) {
      if (a == b) continue;
      EXPECT_NE(stream_seed(kOldRankMul * a + 1, b, Stream::kComputeJitter),
                stream_seed(kOldRankMul * b + 1, a, Stream::kComputeJitter));
    }
  }
}

// Distinct (seed, rank, purpose) give distinct streams: 64 seeds x 1,024 ranks x 5 purposes.
TEST(RngStreams, NoTwoArgumentTriplesShareAStream) {
  std::unordered_set<uint64_t> seen;
  for (uint64_t seed = 0; seed < 64; ++seed)
    for (uint64_t rank = 0; rank < 1024; ++rank)
      for (uint64_t p = 1; p <= 5; ++p) seen.insert(stream_seed(seed, rank, static_cast<Stream>(p)));
  EXPECT_EQ(seen.size(), 64u * 1024u * 5u);
}

// Pairs of streams that differ in one argument by one (seed s and s + 1, rank r
// and r + 1, compute and CPU jitter), over seeds 1..64: each pair's correlation
// over 2,048 normals is N(0, 1/2048) if they are independent. The sum of the
// squared z-scores is then chi-square with one degree per pair; also checked
// with the second stream one counter ahead (a stream that is another's shifted
// copy would show there).
TEST(RngStreams, NeighbouringStreamsAreUncorrelated) {
  constexpr int kN = 2048;
  int pairs = 0;
  double chi2 = 0, worst = 0;
  auto add = [&](const std::vector<double>& a, const std::vector<double>& b) {
    const double z = correlation(a, b) * std::sqrt(static_cast<double>(kN));
    chi2 += z * z;
    worst = std::max(worst, std::fabs(z));
    ++pairs;
  };
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    for (uint64_t rank = 0; rank < 4; ++rank) {
      const auto z = normals(seed, rank, Stream::kComputeJitter, kN + 1);
      const std::vector<double> head(z.begin(), z.end() - 1);
      for (const auto& other : {normals(seed + 1, rank, Stream::kComputeJitter, kN + 1),
                                normals(seed, rank + 1, Stream::kComputeJitter, kN + 1),
                                normals(seed, rank, Stream::kCpuJitter, kN + 1)}) {
        add(head, std::vector<double>(other.begin(), other.end() - 1));
        add(head, std::vector<double>(other.begin() + 1, other.end()));
      }
    }
  }
  // chi-square with `pairs` degrees: mean pairs, sd sqrt(2 pairs).
  EXPECT_LT(std::fabs(chi2 - pairs) / std::sqrt(2.0 * pairs), 4.0) << "chi2 " << chi2 << " over " << pairs;
  EXPECT_LT(worst, 4.9) << "the largest |z| of " << pairs << " pairs";  // P(max > 4.9) < 0.002
}

// Each seed's uniforms (64 equal bins, chi-square with 63 degrees) and normals
// (KS against the normal law) fit, seeds 1..64; and the 64 seeds' chi-square
// p-values are themselves uniform (a second-level KS), as they are when no
// seed is special.
TEST(RngStreams, EachNeighbouringSeedFitsItsLaw) {
  std::vector<double> pvalues;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    const uint64_t s = stream_seed(seed, 0, Stream::kComputeJitter);
    std::vector<int> bins(64, 0);
    constexpr int kN = 8192;
    for (int i = 0; i < kN; ++i) ++bins[static_cast<size_t>(draw_uniform(s, static_cast<uint64_t>(i)) * 64)];
    double chi2 = 0;
    for (int b : bins) chi2 += (b - kN / 64.0) * (b - kN / 64.0) / (kN / 64.0);
    const double k = 63, wh = (std::cbrt(chi2 / k) - (1 - 2 / (9 * k))) / std::sqrt(2 / (9 * k));  // Wilson-Hilferty
    pvalues.push_back(normal_cdf(wh));
    EXPECT_LT(ks_scaled(normals(seed, 0, Stream::kComputeJitter, 4096), normal_cdf), kKs1e4) << "seed " << seed;
  }
  EXPECT_LT(ks_scaled(pvalues, [](double p) { return p; }), kKs1e4);
}

// chi-square with 7 degrees of freedom: P(X <= x), closed form for odd degrees.
double chi2_7_cdf(double x) {
  return std::erf(std::sqrt(x / 2)) -
         std::sqrt(2 * x / std::numbers::pi) * std::exp(-x / 2) * (1 + x / 3 + x * x / 15);
}

// The sweep's replicas in miniature: 8 ranks, 300 steps of the jitter stream
// (counter 2 * step, as a two-op step draws it), a seed's statistic the mean
// over steps of the largest of the 8 normals. Over seeds 1..4,096: neighbouring
// seeds' statistics are uncorrelated (lags 1 to 8), their spread is the one
// independent runs have (Var[max of 8] = 0.3729 per step), and the spread
// within each block of 8 consecutive seeds (what `--seeds 8` sees) follows
// chi-square(7)/7 across the 512 blocks.
TEST(RngStreams, ReplicasAtNeighbouringSeedsAreIndependent) {
  constexpr int kSeeds = 4096, kSteps = 300, kRanks = 8;
  std::vector<double> m(kSeeds);
  for (int i = 0; i < kSeeds; ++i) {
    uint64_t stream[kRanks];
    for (int r = 0; r < kRanks; ++r) stream[r] = stream_seed(static_cast<uint64_t>(i + 1), static_cast<uint64_t>(r), Stream::kComputeJitter);
    double sum = 0;
    for (uint64_t t = 1; t <= kSteps; ++t) {
      double x = -1e9;
      for (uint64_t s : stream) x = std::max(x, draw_normal(s, 2 * t));
      sum += x;
    }
    m[static_cast<size_t>(i)] = sum / kSteps;
  }
  const double var_one = 0.37289 / kSteps;  // Var[max of 8 normals] / steps
  double mean = 0, var = 0;
  for (double x : m) mean += x / kSeeds;
  for (double x : m) var += (x - mean) * (x - mean) / (kSeeds - 1);
  EXPECT_NEAR(mean, 1.42360, 4 * std::sqrt(var_one / kSeeds));  // E[max of 8 normals]
  EXPECT_NEAR(var / var_one, 1.0, 4 * std::sqrt(2.0 / kSeeds));
  for (int lag = 1; lag <= 8; ++lag) {
    double c = 0;
    for (int i = 0; i + lag < kSeeds; ++i) c += (m[static_cast<size_t>(i)] - mean) * (m[static_cast<size_t>(i + lag)] - mean);
    EXPECT_LT(std::fabs(c / (kSeeds - lag) / var), 4 / std::sqrt(static_cast<double>(kSeeds))) << "lag " << lag;
  }
  std::vector<double> block_chi2;
  for (int b = 0; b < kSeeds; b += 8) {
    double bm = 0, bv = 0;
    for (int k = 0; k < 8; ++k) bm += m[static_cast<size_t>(b + k)] / 8;
    for (int k = 0; k < 8; ++k) bv += (m[static_cast<size_t>(b + k)] - bm) * (m[static_cast<size_t>(b + k)] - bm);
    block_chi2.push_back(bv / var_one);
  }
  EXPECT_LT(ks_scaled(block_chi2, chi2_7_cdf), kKs1e4);
}

}  // namespace
}  // namespace fleetsim
