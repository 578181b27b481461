// Tests of sim/model/calibration: the alpha-beta fit, the calibration file and
// the calibrated cost model. CPU-only, no MPI.
#include "sim/model/calibration.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace fleetsim {
namespace {

std::vector<CalibrationSample> synthetic(OpKind op, int ranks, double alpha_s, double beta, double noise) {
  std::vector<CalibrationSample> s;
  int i = 0;
  for (int64_t b = 8; b <= (int64_t{64} << 20); b *= 2, ++i)
    s.push_back({op, ranks, b, (alpha_s + beta * static_cast<double>(b)) * (1.0 + noise * ((i % 3) - 1))});
  return s;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))).string();
}

// The fit recovers alpha and beta exactly from noise-free samples over 8 B..64 MiB.
TEST(Calibration, FitRecoversKnownAlphaBeta) {
  const AlphaBeta f = fit_alpha_beta(synthetic(OpKind::kAllReduce, 4, 12e-6, 0.25e-9, 0.0));
  EXPECT_NEAR(f.alpha_s, 12e-6, 12e-6 * 1e-6);
  EXPECT_NEAR(f.beta_s_per_byte, 0.25e-9, 0.25e-9 * 1e-6);
}

// With 2% noise both coefficients stay within a few percent: small sizes pin alpha.
TEST(Calibration, FitIsRobustToRelativeNoise) {
  const AlphaBeta f = fit_alpha_beta(synthetic(OpKind::kAllGather, 2, 5e-6, 1e-9, 0.02));
  EXPECT_NEAR(f.alpha_s, 5e-6, 5e-6 * 0.05);
  EXPECT_NEAR(f.beta_s_per_byte, 1e-9, 1e-9 * 0.05);
}

// A latency-free data set never yields a negative alpha: it is clamped and beta refitted.
TEST(Calibration, FitClampsNegativeCoefficients) {
  std::vector<CalibrationSample> s = {{OpKind::kAllReduce, 2, 1000, 0.9e-6}, {OpKind::kAllReduce, 2, 1000000, 1e-3}};
  const AlphaBeta f = fit_alpha_beta(s);
  EXPECT_GE(f.alpha_s, 0.0);
  EXPECT_GT(f.beta_s_per_byte, 0.0);
}

// fit_all fits each (op, group size) separately and records the worst relative error.
TEST(Calibration, FitAllGroupsByOpAndRanks) {
  auto s = synthetic(OpKind::kAllReduce, 2, 2e-6, 0.5e-9, 0.0);
  auto t = synthetic(OpKind::kBroadcast, 4, 3e-6, 0.1e-9, 0.0);
  s.insert(s.end(), t.begin(), t.end());
  const auto fits = fit_all(s);
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_EQ(fits[0].op, OpKind::kAllReduce);
  EXPECT_EQ(fits[1].ranks, 4);
  EXPECT_LT(fits[1].max_rel_err, 1e-6);
  EXPECT_EQ(fits[0].max_bytes, int64_t{64} << 20);
}

// A written calibration file loads back with the same fits.
TEST(Calibration, FileRoundTrip) {
  Calibration c;
  c.host = "box";
  c.ranks = 4;
  c.fits = fit_all(synthetic(OpKind::kReduceScatter, 4, 7e-6, 0.3e-9, 0.0));
  const std::string path = temp_path("calib.yaml");
  ASSERT_FALSE(write_calibration(c, path).has_value());
  auto back = load_calibration(path);
  ASSERT_TRUE(back.ok()) << back.errors()[0].to_string();
  ASSERT_EQ(back->fits.size(), 1u);
  EXPECT_EQ(back->fits[0].op, OpKind::kReduceScatter);
  EXPECT_EQ(back->ranks, 4);
  EXPECT_NEAR(back->fits[0].fit.alpha_s, 7e-6, 1e-11);
  EXPECT_NEAR(back->fits[0].fit.beta_s_per_byte, 0.3e-9, 1e-15);
  std::filesystem::remove(path);
}

// Bad calibration files are reported as FILE:LINE:COL: error: at the offending value.
TEST(Calibration, BadFilesHaveLocations) {
  struct Case { const char* text; const char* where; const char* what; };
  const Case cases[] = {
      {"fits:\n  - {op: allsum, ranks: 2, alpha_us: 1, beta_ns_per_byte: 1}\n", ":2:10: error:", "unknown collective"},
      {"fits:\n  - {op: allreduce, ranks: 2}\n", ":2:5: error:", "needs op, ranks"},
      {"fits: []\n", ":1:7: error:", "non-empty list"},
      {"fits:\n  - {op: allreduce, ranks: 2, alpha_us: -1, beta_ns_per_byte: 1}\n", ":2:5: error:", ">= 0"},
      {"fits: [\n", ":2:1: error:", "invalid YAML"},
  };
  for (const Case& c : cases) {
    const std::string path = temp_path("bad.yaml");
    std::ofstream(path) << c.text;
    auto r = load_calibration(path);
    ASSERT_FALSE(r.ok()) << c.text;
    const std::string msg = r.errors()[0].to_string();
    EXPECT_NE(msg.find(path + std::string(c.where)), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
    std::filesystem::remove(path);
  }
}

// A missing file is an error naming the file.
TEST(Calibration, MissingFileIsAnError) {
  auto r = load_calibration("/nonexistent/calibration.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].to_string().find("/nonexistent/calibration.yaml: error: cannot read"), std::string::npos);
}

// The calibrated model returns the fit at its own group size and scales ring steps and bytes to others.
TEST(Calibration, ModelUsesAndScalesFits) {
  Calibration c;
  c.fits.push_back({OpKind::kAllReduce, 2, {10e-6, 1e-9}, 0, 8, 1 << 20});
  const auto m = make_calibrated_model(c, Fleet{});
  GroupShape two{2, 1, 2}, four{4, 1, 4};
  EXPECT_EQ(m->collective_time(OpKind::kAllReduce, 1000, two).ns, 11000);
  // n = 4: alpha x 6/2 ring steps, beta x (2*3/4)/(2*1/2) = 1.5 bytes per rank.
  EXPECT_EQ(m->collective_time(OpKind::kAllReduce, 1000, four).ns, 30000 + 1500);
  // Ops never calibrated borrow all-reduce's fit; barrier is a 4-byte all-reduce.
  EXPECT_EQ(m->collective_time(OpKind::kBarrier, 1 << 20, two).ns, 10004);
  EXPECT_STREQ(m->name(), "calibrated alpha-beta");
}

}  // namespace
}  // namespace fleetsim
