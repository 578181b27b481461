// diagnose on folders it cannot fully read: a symlink loop among the entries,
// a dump or record file that loops or is a FIFO. Each is skipped (not a record
// file) or one located error line with exit 2; never an uncaught exception.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fleetsim/record.h"
#include "sim/diagnose/record.h"
#include "tests/support/command.h"

namespace fleetsim::diagnose {
namespace {

namespace fs = std::filesystem;
using test_support::run_command;

// A record folder holding only steps.csv, plus a symlink loop that is no record file.
fs::path make_folder() {
  const fs::path d = fs::temp_directory_path() / ("fleetsim_record_limits_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  std::ofstream(d / "steps.csv") << csv_header(columns::kSteps) << "1,0,1,1,0\n2,1,2,1,1\n";
  fs::create_symlink("loop_b", d / "loop_a");
  fs::create_symlink("loop_a", d / "loop_b");
  return d;
}

std::string diagnose_cli(const fs::path& d) { return std::string(FLEETSIM_BINARY) + " diagnose " + d.string(); }

TEST(RecordLimits, LoopsThatAreNoRecordFileAreSkipped) {
  const fs::path d = make_folder();
  Result<Record> rec = read_record(d.string());
  ASSERT_TRUE(rec.ok()) << rec.errors()[0].to_string();
  EXPECT_EQ(rec->steps.size(), 2u);
  EXPECT_EQ(run_command(diagnose_cli(d)).exit_code, 0);
  fs::remove_all(d);
}

TEST(RecordLimits, ALoopingDumpIsOneErrorLine) {
  const fs::path d = make_folder();
  fs::create_symlink("rank_3.json", d / "rank_3.json");
  Result<Record> rec = read_record(d.string());
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.errors()[0].loc.file, (d / "rank_3.json").string());
  const auto c = run_command(diagnose_cli(d));
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(c.out, (d / "rank_3.json").string() +
                       ": error: cannot read flight-recorder dump: Too many levels of symbolic links\n");
  fs::remove_all(d);
}

TEST(RecordLimits, ALoopingOrFifoRecordFileIsOneErrorLine) {
  const fs::path d = make_folder();
  fs::create_symlink("telemetry.csv", d / "telemetry.csv");
  auto c = run_command(diagnose_cli(d));
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.out.find("telemetry.csv': Too many levels of symbolic links"), std::string::npos) << c.out;
  EXPECT_EQ(std::count(c.out.begin(), c.out.end(), '\n'), 1) << c.out;
  fs::remove(d / "telemetry.csv");
  ASSERT_EQ(::mkfifo((d / "job.log").c_str(), 0600), 0);
  c = run_command(diagnose_cli(d));  // must not wait for a writer
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.out.find("job.log' is a FIFO; expected a regular file"), std::string::npos) << c.out;
  fs::remove_all(d);
}

}  // namespace
}  // namespace fleetsim::diagnose
