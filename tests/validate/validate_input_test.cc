// `fleetsim validate` and `calibrate` reject bad flags in one line before
// mpirun starts: a --hostfile that is missing, a folder or unreadable, and
// --ranks 0. No MPI is needed: nothing is launched.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/command.h"
#include "validate/launcher.h"

namespace fs = std::filesystem;

namespace {

const std::string kBin = FLEETSIM_BINARY;
const std::string kSrc = FLEETSIM_SOURCE_DIR;

fleetsim::test_support::CommandResult fleetsim_cmd(const std::string& args) {
  return fleetsim::test_support::run_command(kBin + " " + args);
}

TEST(ValidateInput, HostfileIsCheckedBeforeLaunch) {
  const auto r = fleetsim_cmd("validate " + kSrc + "/scenarios/crash_rank.yaml --hostfile /nonexistent/hosts");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "--hostfile: error: '/nonexistent/hosts' does not exist\n");
  const auto c = fleetsim_cmd("calibrate --ranks 2 --hostfile /nonexistent/hosts");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(c.out, "--hostfile: error: '/nonexistent/hosts' does not exist\n");
}

TEST(ValidateInput, HostfileReasons) {
  using fleetsim::validate::hostfile_unreadable;
  const fs::path dir = fs::temp_directory_path() / ("fleetsim-hostfile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  EXPECT_EQ(hostfile_unreadable(dir.string()), "'" + dir.string() + "' is a folder, not a hostfile");
  const fs::path hosts = dir / "hosts";
  std::ofstream(hosts) << "localhost slots=2\n";
  EXPECT_EQ(hostfile_unreadable(hosts.string()), "");
  if (::geteuid() != 0) {  // root reads anything
    fs::permissions(hosts, fs::perms::none);
    EXPECT_EQ(hostfile_unreadable(hosts.string()), "cannot read '" + hosts.string() + "': Permission denied");
  }
  fs::remove_all(dir);
}

TEST(ValidateInput, RanksZeroIsAnError) {
  const auto r = fleetsim_cmd("validate " + kSrc + "/scenarios/crash_rank.yaml --ranks 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "--ranks: error: expected a number of processes >= 1 (got 0); leave it out to use the "
                   "scenario's ranks\n");
}

TEST(ValidateInput, AHugeValueIsEchoedClipped) {
  const auto r = fleetsim_cmd("validate " + kSrc + "/scenarios/crash_rank.yaml --backend " + std::string(5000, 'y'));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "--backend: error: unknown backend '" + std::string(200, 'y') +
                       "... (5000 characters)' (expected mpi, nccl or torch)\n");
}

}  // namespace
