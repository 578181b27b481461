// Runs the built `fleetsim collectives` (FLEETSIM_BINARY) and checks its CSV
// header, the chosen algorithms, and the one-line "error: ..." / exit 2 contract.
#include <gtest/gtest.h>

#include "tests/support/command.h"

#include <cstdio>
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
