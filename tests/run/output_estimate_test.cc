// The output-size estimate: within 2x of what library scenarios really write,
// printed by `check`, and held by `run` against --max-output before anything is
// written (a huge job.steps or a 1 ns telemetry period is refused, not run).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "sim/run/run.h"
#include "tests/support/command.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;
using test_support::run_command;

const std::string kScenarios = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/";

int64_t folder_bytes(const fs::path& dir) {
  int64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += static_cast<int64_t>(e.file_size());
  return n;
}

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("fleetsim_estimate_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Completed, hung (a fault, and a program that diverges by itself) and pipeline runs.
TEST(OutputEstimate, WithinTwiceTheRealSize) {
  const fs::path d = temp_dir("real");
  for (const char* name : {"skip_collective", "stalled_cpu", "tp_desync", "missing_gang", "pp_skip_recv",
                           "straggler_tax_16k"}) {
    Result<PreparedRun> run = prepare_run(kScenarios + name + ".yaml");
    ASSERT_TRUE(run.ok()) << name;
    Result<OutputEstimate> e = estimate_run_outputs(run->plan, *run->cost, std::nullopt, "auto");
    ASSERT_TRUE(e.ok()) << name;
    RunOptions opts;
    opts.out_dir = (d / name).string();
    ASSERT_TRUE(execute(*run, opts).ok()) << name;
    const int64_t real = folder_bytes(d / name);
    EXPECT_LE(e->total_bytes, 2 * real) << name << ": " << e->describe() << " vs " << real << " bytes";
    EXPECT_GE(2 * e->total_bytes, real) << name << ": " << e->describe() << " vs " << real << " bytes";
  }
  fs::remove_all(d);
}

TEST(OutputEstimate, CheckPrintsIt) {
  const auto c = run_command(std::string(FLEETSIM_BINARY) + " check " + kScenarios + "step400_fixed.yaml");
  EXPECT_EQ(c.exit_code, 0);
  EXPECT_NE(c.out.find("\noutputs: about "), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("fr/"), std::string::npos) << c.out;
}

// Refused with the estimate and the way on; nothing is left on disk.
TEST(OutputEstimate, RunRefusesAboveTheLimit) {
  const fs::path d = temp_dir("refuse");
  const std::string run = std::string(FLEETSIM_BINARY) + " run " + kScenarios + "step400_fixed.yaml --out " +
                          (d / "out").string();
  auto c = run_command(run + " --set job.telemetry_period=1ns");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(c.out.rfind("--max-output: error: the run would write about ", 0), 0u) << c.out;
  EXPECT_NE(c.out.find("telemetry.csv"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("above the 2 GiB limit; raise it with --max-output SIZE"), std::string::npos) << c.out;
  c = run_command(run + " --set job.steps=1099511627776");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.out.find("steps.csv"), std::string::npos) << c.out;
  c = run_command(run + " --max-output 1MiB");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.out.find("above the 1 MiB limit"), std::string::npos) << c.out;
  EXPECT_TRUE(fs::is_empty(d)) << "a refused run left files";
  c = run_command(std::string(FLEETSIM_BINARY) + " run " + kScenarios + "missing_gang.yaml --out " +
                  (d / "out").string() + " --max-output 10MiB");
  EXPECT_EQ(c.exit_code, 0) << c.out;
  fs::remove_all(d);
}

TEST(OutputEstimate, FlightRecorderMemoryIsCapped) {
  OutputEstimate e;
  e.fr_memory_bytes = kFlightRecorderMemoryMax + 1;
  std::optional<Diagnostic> d = check_output_estimate(e, INT64_MAX);
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->message.find("lower job.flight_recorder_entries"), std::string::npos) << d->message;
}

}  // namespace
}  // namespace fleetsim
