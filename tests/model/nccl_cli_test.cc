// Runs the built `fleetsim collectives` (FLEETSIM_BINARY) and checks its CSV
// header, the chosen algorithms, and the one-line "error: ..." / exit 2 contract.
#include <gtest/gtest.h>

#include "tests/support/command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct CliRun {
  int rc = -1;
  std::string out;
};

CliRun run_cli(const std::string& args) {
  const fleetsim::test_support::CommandResult c =
      fleetsim::test_support::run_command(std::string(FLEETSIM_BINARY) + " collectives " + args);
  return {c.exit_code, c.out};
}

// CSV output has exactly nccl-tests' columns plus algo/proto, and shows the Ring/LL -> NVLS switch.
TEST(NcclCli, CsvSweepShowsRingThenNvls) {
  const CliRun r = run_cli("--system dgx-h100 --nodes 1 --op allreduce --min-bytes 1MiB --max-bytes 2MiB --format csv");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.rfind("size,count,type,redop,root,time_us,algbw,busbw,algo,proto\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("1048576,262144,float,sum,-1,28.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",RING,LL\n"), std::string::npos);
  EXPECT_NE(r.out.find("2097152,524288,float,sum,-1,"), std::string::npos);
  EXPECT_NE(r.out.find(",NVLS,SIMPLE\n"), std::string::npos);
}

// The table format ends with nccl-tests' "# Avg bus bandwidth" footer; --set edits the fabric.
TEST(NcclCli, TableHasFooterAndSetChangesFabric) {
  const CliRun a = run_cli("--system dgx-h100 --nodes 2 --algo ring -b 1GiB -e 1GiB");
  const CliRun b = run_cli("--system dgx-h100 --nodes 2 --algo ring -b 1GiB -e 1GiB --set nic_bandwidth=200Gb/s");
  ASSERT_EQ(a.rc, 0) << a.out;
  ASSERT_EQ(b.rc, 0) << b.out;
  EXPECT_NE(a.out.find("# Avg bus bandwidth"), std::string::npos);
  EXPECT_NE(a.out.find("(us)"), std::string::npos);
  EXPECT_NE(a.out, b.out);
}

// The first row's time_us of a CSV sweep.
double first_time_us(const std::string& csv) {
  const size_t row = csv.find('\n') + 1;
  size_t at = row;
  for (int comma = 0; comma < 5; ++comma) at = csv.find(',', at) + 1;
  return std::stod(csv.substr(at));
}

// --calibration applies a calibration's `nccl:` section as a scenario does: its
// figures and NCCL constants, and the offset of the op it holds (none for others).
TEST(NcclCli, CalibrationAppliesFiguresConstantsAndOwnOffset) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("fleetsim-cli-cal-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "backend: nccl-tests\nranks: 32\nfits:\n"
                         "  - {op: allreduce, ranks: 32, alpha_us: 44.8, beta_ns_per_byte: 0.0069, max_rel_err: 0.5, "
                         "min_bytes: 8, max_bytes: 8589934592}\n"
                         "nccl:\n  system: dgx-h100\n  nodes: 4\n  gpus_per_node: 8\n  version: \"2.24.3\"\n"
                         "  samples: 31\n  max_rel_err: 0.37\n  figures: {net_latency: 24.4, bw_inter: 21.8}\n"
                         "  latency_offset_us: {allreduce: -50}\n";
  const std::string sweep = "--system dgx-h100 --nodes 4 -b 1MiB -e 1GiB -f 32 --format csv ";
  const std::string as_set = "--nccl-version 2.24.3 --set net_latency=24.4 --set bw_inter=21.8 ";
  const CliRun gather = run_cli(sweep + "--op allgather --calibration " + file.string());
  const CliRun gather_set = run_cli(sweep + "--op allgather " + as_set);
  const CliRun gather_preset = run_cli(sweep + "--op allgather");
  ASSERT_EQ(gather.rc, 0) << gather.out;
  EXPECT_EQ(gather.out, gather_set.out);
  EXPECT_NE(gather.out, gather_preset.out);
  const CliRun reduce = run_cli(sweep + "--op allreduce --calibration " + file.string());
  const CliRun reduce_set = run_cli(sweep + "--op allreduce " + as_set);
  ASSERT_EQ(reduce.rc, 0) << reduce.out;
  EXPECT_NEAR(first_time_us(reduce.out), first_time_us(reduce_set.out) - 50, 0.01) << reduce.out;
  const CliRun table = run_cli("--system dgx-h100 --nodes 4 -b 1MiB -e 1MiB --calibration " + file.string());
  EXPECT_NE(table.out.find("# calibration " + file.string() + ": net_latency=24.400 bw_inter=21.800; latency "
                           "offset -50.00 us per call\n"), std::string::npos) << table.out;
  std::filesystem::remove(file);
  // A file that cannot be read is one located diagnostic, exit 2.
  const CliRun bad = run_cli("--calibration /nonexistent/calibration.yaml");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_EQ(bad.out.rfind("/nonexistent/calibration.yaml: error: ", 0), 0u) << bad.out;
  EXPECT_EQ(bad.out.find('\n'), bad.out.size() - 1) << bad.out;
}

// Bad input gives exit code 2 and a one-line "error: ..." naming what was expected.
TEST(NcclCli, BadInputIsOneLineErrorExit2) {
  const char* cases[] = {"--system dgx-z900", "--op allsmash", "--algo warp", "--min-bytes 2GiB --max-bytes 1GiB",
                         "--max-bytes 12parsecs", "--nccl-version 1.0", "--set channels=zero"};
  for (const char* c : cases) {
    const CliRun r = run_cli(c);
    SCOPED_TRACE(c);
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.out.rfind("error: ", 0), 0u) << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  }
}

}  // namespace
