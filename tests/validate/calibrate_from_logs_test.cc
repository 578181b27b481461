// `calibrate --from-nccl-tests` on the published logs: the fit lowers the error
// against the model before it, the file it writes loads back and a scenario
// runs with it, and bad logs or machines are refused with exit 2 and nothing
// written.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "sim/io/nccl_tests_log.h"
#include "tests/support/command.h"
#include "validate/calibrate_from_logs.h"

namespace fleetsim::validate {
namespace {

namespace fs = std::filesystem;
using test_support::run_command;

const std::string kLogs = std::string(FLEETSIM_SOURCE_DIR) + "/tests/fixtures/nccl-tests-logs/";

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("fleetsim-logcal-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

LogCalibrateSpec spec_for(std::initializer_list<const char*> files) {
  LogCalibrateSpec s;
  for (const char* f : files) s.files.push_back(kLogs + f);
  return s;
}

// Median |busbw error| over the sizes from 64 KiB up, for the model's times `which`.
double median_error(const LogCalibrateResult& r, double SizeFit::*which) {
  std::vector<double> e;
  for (const SizeFit& z : r.sizes)
    if (z.bytes >= (64 << 10)) e.push_back(std::abs(z.measured_us / (z.*which) - 1));
  std::sort(e.begin(), e.end());
  return e[e.size() / 2];
}

TEST(CalibrateFromLogs, DgxH100FitBeatsTheModelBeforeIt) {
  auto r = calibrate_from_nccl_tests(spec_for({"dgx-h100-1node-all_reduce.log"}));
  ASSERT_TRUE(r.ok()) << r.errors()[0].to_string();
  EXPECT_EQ(r->fabric.system, "dgx-h100");
  EXPECT_EQ(r->fabric.nodes, 1);
  EXPECT_EQ(r->fabric.gpus_per_node, 8);
  EXPECT_EQ(r->options.version, NcclOptions{}.version);  // the log names no release
  ASSERT_EQ(r->sizes.size(), 32u);
  ASSERT_TRUE(r->calibration.nccl.has_value());
  // The execution model already times this machine's mid sizes within ~4%
  // (median from 64 KiB, docs/collectives.md); the fit may still set a figure
  // that lowers its own objective (every size), so only the error bound is held.
  ASSERT_EQ(r->calibration.nccl->latency_offset_us.size(), 1u);
  EXPECT_EQ(r->calibration.nccl->latency_offset_us[0].first, OpKind::kAllReduce);
  EXPECT_EQ(r->calibration.backend, "nccl-tests");
  // The default fits the faster of the two times: the 32 B row's 68 us hiccup drops out.
  EXPECT_DOUBLE_EQ(r->sizes[2].measured_us, 13.52);
  const double before = median_error(*r, &SizeFit::before_us), after = median_error(*r, &SizeFit::fitted_us);
  EXPECT_LT(before, 0.05);
  EXPECT_LT(after, 0.05) << before << " -> " << after;
  for (const SizeFit& z : r->sizes) ASSERT_TRUE(z.loo_us.has_value()) << z.bytes;
  // Without its own size, a mid size is predicted within 25%.
  for (const SizeFit& z : r->sizes) {
    if (z.bytes < (1 << 20)) continue;
    EXPECT_LT(std::abs(z.measured_us / *z.loo_us - 1), 0.25) << z.bytes;
  }
}

TEST(CalibrateFromLogs, TimesColumnChoice) {
  LogCalibrateSpec s = spec_for({"dgx-h100-1node-all_reduce.log"});
  s.times = "out-of-place";
  s.leave_one_out = false;
  auto r = calibrate_from_nccl_tests(s);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->sizes[2].measured_us, 68.14);
  EXPECT_FALSE(r->sizes[2].loo_us.has_value());
  s.times = "in-place";
  r = calibrate_from_nccl_tests(s);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->sizes[0].measured_us, 13.03);
}

TEST(CalibrateFromLogs, SeveralFilesDescribeTheWidestMachine) {
  LogCalibrateSpec s = spec_for({"dgx-h100-1node-all_reduce.log", "h100-2node-a3mega-all_reduce.log"});
  s.leave_one_out = false;  // the machine is the point here; the test above checks the refits
  auto r = calibrate_from_nccl_tests(s);
  ASSERT_TRUE(r.ok()) << r.errors()[0].to_string();
  EXPECT_EQ(r->tables.size(), 2u);
  EXPECT_EQ(r->fabric.nodes, 2);
  EXPECT_EQ(r->fabric.gpus_per_node, 8);
  EXPECT_EQ(r->sizes.size(), 63u);
  EXPECT_EQ(r->hosts.size(), 2u);
}

TEST(CalibrateFromLogs, FiveOpsGetAnOffsetEach) {
  LogCalibrateSpec s = spec_for({"dgx2-v100-legacy-5ops.log"});
  s.system = "dgx-a100";
  s.leave_one_out = false;
  auto r = calibrate_from_nccl_tests(s);
  ASSERT_TRUE(r.ok()) << r.errors()[0].to_string();
  EXPECT_EQ(r->fabric.gpus_per_node, 12);
  EXPECT_EQ(r->calibration.nccl->latency_offset_us.size(), 5u);
  EXPECT_EQ(r->sizes.size(), 5u * 31 - 6);  // the size-0 rows of all_gather and reduce_scatter are not fitted
}

TEST(CalibrateFromLogs, ReleaseToConstants) {
  EXPECT_EQ(constants_version_for(""), "");
  EXPECT_EQ(constants_version_for("2.28.9"), "2.28.9");
  EXPECT_EQ(constants_version_for("2.6.4"), "2.18");
  EXPECT_EQ(preset_for_gpu("NVIDIA H100 80GB HBM3"), "dgx-h100");
  EXPECT_EQ(preset_for_gpu("NVIDIA A100-SXM4-40GB"), "dgx-a100");
  EXPECT_EQ(preset_for_gpu("NVIDIA H200"), "dgx-h200");
  EXPECT_EQ(preset_for_gpu("Tesla V100-SXM2-32GB"), "");
  LogCalibrateSpec s = spec_for({"v100-2node-efa-nccl2.6-all_reduce.log"});
  s.system = "dgx-a100";
  s.leave_one_out = false;
  auto r = calibrate_from_nccl_tests(s);
  ASSERT_TRUE(r.ok()) << r.errors()[0].to_string();
  EXPECT_EQ(r->measured_version, "2.6.4");
  EXPECT_EQ(r->options.version, "2.18");
  EXPECT_EQ(r->fabric.nodes, 2);
  EXPECT_EQ(r->fabric.gpus_per_node, 1);
}

TEST(CalibrateFromLogs, RefusesWhatItCannotDescribe) {
  auto r = calibrate_from_nccl_tests(spec_for({"v100-2node-efa-nccl2.6-all_reduce.log"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("matches no fabric preset: pass --system"), std::string::npos);
  r = calibrate_from_nccl_tests(spec_for({"dgx-a100-2node-all_reduce.log", "dgx-h100-1node-all_reduce.log"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].loc.line, 14);
  EXPECT_NE(r.errors()[0].message.find("an earlier one on 'NVIDIA A100-SXM4-40GB'"), std::string::npos);
  LogCalibrateSpec s = spec_for({"dgx-h100-1node-all_reduce.log"});
  s.nodes = 3;
  r = calibrate_from_nccl_tests(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("8 ranks do not split evenly over 3 nodes"), std::string::npos);
}

// A table no name identifies (all_gather's layout is alltoall's) needs --op.
TEST(CalibrateFromLogs, AmbiguousTableNeedsOp) {
  const fs::path dir = scratch("op");
  const std::string log = (dir / "run.txt").string();
  ASSERT_EQ(run_command("sed -n '4,56p' '" + kLogs + "dgx2-v100-legacy-5ops.log' > '" + log + "'").exit_code, 0);
  LogCalibrateSpec s;
  s.files = {log};
  s.system = "dgx-a100";
  s.leave_one_out = false;
  auto r = calibrate_from_nccl_tests(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].loc.line, 18);
  EXPECT_NE(r.errors()[0].message.find("pass --op"), std::string::npos);
  s.op = "all_gather";
  r = calibrate_from_nccl_tests(s);
  ASSERT_TRUE(r.ok()) << r.errors()[0].to_string();
  EXPECT_EQ(r->sizes.front().op, OpKind::kAllGather);
  fs::remove_all(dir);
}

// The CLI writes a calibration file that loads back with the fitted figures,
// and a scenario runs with it; a bad log exits 2 and writes nothing.
TEST(CalibrateFromLogs, CliFileLoadsBackAndAScenarioRunsWithIt) {
  const fs::path dir = scratch("cli");
  const std::string bin = FLEETSIM_BINARY, out = (dir / "h100.yaml").string();
  auto c = run_command(bin + " calibrate --from-nccl-tests " + kLogs + "dgx-h100-1node-all_reduce.log --out " + out);
  ASSERT_EQ(c.exit_code, 0) << c.out;
  EXPECT_TRUE(fs::exists(dir / "h100.csv"));
  auto loaded = load_calibration(out);
  ASSERT_TRUE(loaded.ok()) << loaded.errors()[0].to_string();
  auto direct = calibrate_from_nccl_tests(spec_for({"dgx-h100-1node-all_reduce.log"}));
  ASSERT_TRUE(direct.ok());
  ASSERT_TRUE(loaded->nccl.has_value());
  ASSERT_EQ(loaded->nccl->figures.size(), direct->calibration.nccl->figures.size());
  for (size_t i = 0; i < loaded->nccl->figures.size(); ++i) {
    EXPECT_EQ(loaded->nccl->figures[i].first, direct->calibration.nccl->figures[i].first);
    EXPECT_NEAR(loaded->nccl->figures[i].second, direct->calibration.nccl->figures[i].second, 1e-4);
  }
  EXPECT_NEAR(loaded->nccl->offset_us(OpKind::kAllReduce), direct->calibration.nccl->offset_us(OpKind::kAllReduce),
              1e-4);
  c = run_command(bin + " run " + FLEETSIM_SOURCE_DIR + "/scenarios/step400_fixed.yaml --set calibration=" + out +
                  " --set job.steps=20 --outputs summary --out " + (dir / "run").string());
  ASSERT_EQ(c.exit_code, 0) << c.out;
  EXPECT_NE(c.out.find("calibrated figures"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("20 of 20 steps completed"), std::string::npos) << c.out;
  const std::string bad_out = (dir / "bad.yaml").string();
  c = run_command("head -30 " + kLogs + "dgx-h100-1node-all_reduce.log > " + (dir / "cut.log").string() + " && " +
                  bin + " calibrate --from-nccl-tests " + (dir / "cut.log").string() + " --out " + bad_out);
  EXPECT_EQ(c.exit_code, 2) << c.out;
  EXPECT_NE(c.out.find("cut.log:30:1: error: the table at line 14 ends without"), std::string::npos) << c.out;
  EXPECT_FALSE(fs::exists(bad_out));
  EXPECT_FALSE(fs::exists(dir / "bad.csv"));
  c = run_command(bin + " calibrate --from-nccl-tests " + kLogs + "dgx-h100-1node-all_reduce.log --times fastest --out " +
                  bad_out);
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.out.find("--times: error: expected min, out-of-place or in-place"), std::string::npos) << c.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fleetsim::validate
