// Tests for the shared basics: exact time formatting, diagnostics, rng streams.
#include <gtest/gtest.h>

#include <cmath>

#include "fleetsim/rng.h"
#include "fleetsim/status.h"
#include "fleetsim/time.h"

namespace fleetsim {
namespace {

// Seconds are printed exactly, with nine decimals, for any sign.
TEST(FormatSeconds, ExactNineDecimals) {
  EXPECT_EQ(format_seconds(0), "0.000000000");
  EXPECT_EQ(format_seconds(1'500'000'001), "1.500000001");
  EXPECT_EQ(format_seconds(-2'000'000'000), "-2.000000000");
}

// Diagnostics print GCC-style with 1-based positions.
TEST(Diagnostic, GccStyle) {
  Diagnostic d;
  d.loc.file = "a.yaml";
  d.loc.line = 12;
  d.loc.col = 7;
  d.message = "ranks must be > 0 (got -4)";
  EXPECT_EQ(d.to_string(), "a.yaml:12:7: error: ranks must be > 0 (got -4)");
}

// Streams for different ranks or purposes differ; the same key repeats exactly.
TEST(Rng, StreamsAreIndependentAndRepeatable) {
  const uint64_t a = stream_seed(1, 0, Stream::kComputeJitter);
  EXPECT_EQ(a, stream_seed(1, 0, Stream::kComputeJitter));
  EXPECT_NE(a, stream_seed(1, 1, Stream::kComputeJitter));
  EXPECT_NE(a, stream_seed(1, 0, Stream::kCpuJitter));
  EXPECT_NE(a, stream_seed(2, 0, Stream::kComputeJitter));
  EXPECT_EQ(draw_u64(a, 5), draw_u64(a, 5));
}

// The normal draw has mean ~0 and variance ~1 over many counters.
TEST(Rng, NormalMoments) {
  const uint64_t s = stream_seed(42, 3, Stream::kComputeJitter);
  double sum = 0, sum2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = draw_normal(s, static_cast<uint64_t>(i));
    sum += x;
    sum2 += x * x;
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(sum2 / n - mean * mean, 1.0, 0.02);
}

// Uniform draws lie strictly inside (0, 1).
TEST(Rng, UniformOpenInterval) {
  const uint64_t s = stream_seed(7, 0, Stream::kCpuJitter);
  for (uint64_t i = 0; i < 10000; ++i) {
    const double u = draw_uniform(s, i);
    EXPECT_GT(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace fleetsim
