// End-to-end tests of `fleetsim validate` and `fleetsim calibrate` on real MPI
// processes (2 to 4 ranks, oversubscribed, short timeouts). Skipped when the
// MPI runner was not built. Each run writes under a folder unique to the test
// process, which also identifies its rank processes in /proc.
#include <gtest/gtest.h>

#include "tests/support/command.h"
#include "tests/support/files.h"
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/pickle_reader.h"
#include "sim/model/calibration.h"

namespace fs = std::filesystem;

namespace {

const std::string kBin = FLEETSIM_BINARY;
const std::string kSrc = FLEETSIM_SOURCE_DIR;

bool have_runner() { return fs::exists(fs::path(kBin).parent_path() / "fleetsim-mpi-runner"); }

std::string out_dir(const std::string& name) {
  return (fs::temp_directory_path() / ("fleetsim-validate-" + std::to_string(::getpid())) / name).string();
}

// Runs a command; returns its exit status and output (stdout and stderr).
int run(const std::string& cmd, std::string* out) {
  fleetsim::test_support::CommandResult c = fleetsim::test_support::run_command(cmd);
  *out = std::move(c.out);
  return c.exit_code;
}

// Live rank processes whose command line mentions `marker` (our output folder).
int runners_alive(const std::string& marker) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ifstream st(e.path() / "stat");
    std::string stat;
    std::getline(st, stat);
    const bool zombie = stat.find(") Z") != std::string::npos;
    if (!zombie && cmd.find("fleetsim-mpi-runner") != std::string::npos && cmd.find(marker) != std::string::npos) ++n;
  }
  return n;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string validate_cmd(const std::string& scenario, const std::string& out, const std::string& extra = "",
                         const std::string& timeout = "2s") {
  return kBin + " validate " + kSrc + "/scenarios/validate/" + scenario + " --backend mpi --out " + out +
         " --calibration " + kSrc + "/notebooks/data/calibration.yaml --timeout " + timeout + " --grace 3s " + extra;
}

// The scaled step-400 hang, for real: hang at step 40, watchdogs fired, rank 0
// one world collective ahead in its dump, diagnose names rank 0; nothing left behind.
TEST(MpiValidate, Step40HangsForReal) {
  if (!have_runner()) GTEST_SKIP() << "fleetsim-mpi-runner not built (no MPI)";
  const std::string out = out_dir("hang");
  std::string text;
  ASSERT_EQ(run(validate_cmd("step40_hang_4ranks.yaml", out, "--ranks 4 --set job.steps=45"), &text), 0) << text;
  const auto s = read_json(out + "/real/summary.json");
  EXPECT_EQ(s["outcome"], "hang") << text;
  EXPECT_EQ(s["hang"]["step"], 40);
  EXPECT_NE(s["real"]["mpirun_exit_code"], 0);
  std::ifstream log(out + "/real/job.log");
  const std::string all((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE"),
            std::string::npos);
  for (int r = 0; r < 4; ++r) {
    // The real runners dump as the simulator does: PyTorch's default pickle.
    const std::string name = out + "/real/fr/comm_lib_trace_rank_" + std::to_string(r);
    std::ifstream in(name, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto fr = fleetsim::diagnose::read_pickle(bytes, name);
    ASSERT_TRUE(fr.ok()) << name;
    EXPECT_EQ((*fr)["pg_status"]["0"]["last_enqueued_collective"], r == 0 ? 1 : -1) << "rank " << r;
  }
  auto d = fleetsim::diagnose::diagnose_dir(out + "/real");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, fleetsim::diagnose::Verdict::kHang);
  EXPECT_EQ(d->cause, fleetsim::diagnose::Cause::kExtraCollective);
  EXPECT_EQ(d->culprit_ranks, std::vector<int>{0});
  EXPECT_EQ(runners_alive(out), 0);
  fleetsim::test_support::remove_with_empty_parent(out);
}

// The founding case in its pure data-parallel form: rank 2's 4-byte metric
// all-reduce on the world group meets its peers' gradient all-reduce at one
// sequence number. Collectives match by order, not by size, so the real job
// hangs at step 25 as NCCL would (no MPI_ERR_TRUNCATE, no crash), in step with
// the simulator, and diagnose names rank 2 from the real dumps.
TEST(MpiValidate, PureDataParallelMetricHangsAtItsStep) {
  if (!have_runner()) GTEST_SKIP() << "fleetsim-mpi-runner not built (no MPI)";
  const std::string out = out_dir("metric_dp");
  std::string text;
  ASSERT_EQ(run(validate_cmd("metric_dp_4ranks.yaml", out, "--set job.steps=30"), &text), 0) << text;
  const auto real = read_json(out + "/real/summary.json");
  const auto sim = read_json(out + "/sim/summary.json");
  EXPECT_EQ(real["outcome"], "hang") << text;
  EXPECT_EQ(real["hang"]["step"], 25) << text;
  EXPECT_EQ(sim["outcome"], "hang");
  EXPECT_EQ(sim["hang"]["step"], 25);
  std::ifstream log(out + "/mpirun.log");
  const std::string all((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all.find("MPI_ERR_TRUNCATE"), std::string::npos) << all;
  auto d = fleetsim::diagnose::diagnose_dir(out + "/real");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->verdict, fleetsim::diagnose::Verdict::kHang);
  EXPECT_EQ(d->culprit_ranks, std::vector<int>{2});
  EXPECT_EQ(runners_alive(out), 0);
  fleetsim::test_support::remove_with_empty_parent(out);
}

// The fixed variant completes on real processes.
TEST(MpiValidate, FixedVariantCompletes) {
  if (!have_runner()) GTEST_SKIP() << "fleetsim-mpi-runner not built (no MPI)";
  const std::string out = out_dir("fixed");
  std::string text;
  ASSERT_EQ(run(validate_cmd("step40_fixed_4ranks.yaml", out, "--set job.steps=42"), &text), 0) << text;
  const auto s = read_json(out + "/real/summary.json");
  EXPECT_EQ(s["outcome"], "completed") << text;
  EXPECT_EQ(s["steps_completed"], 42);
  EXPECT_EQ(s["real"]["mpirun_exit_code"], 0);
  EXPECT_TRUE(fs::exists(out + "/real/fr/comm_lib_trace_rank_3"));
  fleetsim::test_support::remove_with_empty_parent(out);
}

// A crash fault ends the job non-zero through mpirun, without waiting for a watchdog.
TEST(MpiValidate, CrashExitsNonZeroWithoutHanging) {
  if (!have_runner()) GTEST_SKIP() << "fleetsim-mpi-runner not built (no MPI)";
  const std::string out = out_dir("crash");
  std::string text;
  ASSERT_EQ(run(validate_cmd("crash_2ranks.yaml", out), &text), 0) << text;
  const auto s = read_json(out + "/real/summary.json");
  EXPECT_EQ(s["outcome"], "crash") << text;
  EXPECT_EQ(s["crash"]["rank"], 1);
  EXPECT_NE(s["real"]["mpirun_exit_code"], 0);
  EXPECT_EQ(s["real"]["killed_by_launcher"], false);
  EXPECT_FALSE(fs::exists(out + "/real/fr/comm_lib_trace_rank_1"));  // a dead process dumps nothing
  EXPECT_EQ(runners_alive(out), 0);
  fleetsim::test_support::remove_with_empty_parent(out);
}

// Killing the launcher in the middle of a hang leaves no rank process behind.
TEST(MpiValidate, NoOrphansWhenTheLauncherIsKilled) {
  if (!have_runner()) GTEST_SKIP() << "fleetsim-mpi-runner not built (no MPI)";
  const std::string out = out_dir("orphans");
  const std::string log = out + ".log";
  // A TMPDIR inside this test's folder: the launcher, killed, cannot remove the job's own.
  const fs::path tmp = fs::path(out).parent_path() / "orphans-tmp";
  fs::create_directories(tmp);
  const std::string cmd = "exec env TMPDIR=" + tmp.string() + " " +
                          validate_cmd("step40_hang_4ranks.yaml", out, "", "60s") + " >" + log + " 2>&1";
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (runners_alive(out) < 4 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(runners_alive(out), 4) << cmd;  // the 4 ranks (and mpirun, whose command line names them)
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(child, SIGKILL);  // `exec` made the shell's pid the launcher's: this kills fleetsim itself
  ::waitpid(child, nullptr, 0);
  const auto gone = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (runners_alive(out) > 0 && std::chrono::steady_clock::now() < gone)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(runners_alive(out), 0);
  fs::remove_all(fs::path(out).parent_path());
}

// calibrate writes a loadable calibration with a fit per swept collective, and its CSV.
TEST(MpiCalibrate, WritesALoadableCalibration) {
  if (!have_runner()) GTEST_SKIP() << "fleetsim-mpi-runner not built (no MPI)";
  const std::string out = out_dir("cal");
  fs::create_directories(out);
  std::string text;
  ASSERT_EQ(run(kBin + " calibrate --backend mpi --ranks 2 --ops allreduce,broadcast --max-bytes 64KiB "
                "--step-factor 8 --iters 3 --out " + out + "/c.yaml", &text), 0) << text;
  auto c = fleetsim::load_calibration(out + "/c.yaml");
  ASSERT_TRUE(c.ok()) << text;
  EXPECT_EQ(c->fits.size(), 2u);
  EXPECT_NE(c->find(fleetsim::OpKind::kBroadcast, 2), nullptr);
  EXPECT_TRUE(fs::exists(out + "/c.csv"));
  EXPECT_NE(text.find("fit        allreduce"), std::string::npos);
  fleetsim::test_support::remove_with_empty_parent(out);
}

// Bad input exits 2 with one error line and writes no output folder.
TEST(MpiValidate, BadInputExitsTwo) {
  const std::string out = out_dir("bad");
  std::string text;
  EXPECT_EQ(run(kBin + " validate /nonexistent.yaml --backend mpi --out " + out, &text), 2);
  EXPECT_NE(text.find("error:"), std::string::npos);
  EXPECT_EQ(run(kBin + " validate " + kSrc + "/scenarios/validate/crash_2ranks.yaml --backend gloo --out " + out, &text), 2);
  EXPECT_NE(text.find("--backend: error: unknown backend 'gloo'"), std::string::npos) << text;
  EXPECT_EQ(run(kBin + " validate " + kSrc + "/scenarios/validate/crash_2ranks.yaml --ranks 3 --out " + out, &text), 2);
  const std::string bad = fs::temp_directory_path() / ("bad-cal-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(bad) << "fits:\n  - {op: allsum, ranks: 2, alpha_us: 1, beta_ns_per_byte: 1}\n";
  EXPECT_EQ(run(kBin + " validate " + kSrc + "/scenarios/validate/crash_2ranks.yaml --calibration " + bad +
                " --out " + out, &text), 2);
  EXPECT_NE(text.find(bad + ":2:10: error:"), std::string::npos) << text;
  EXPECT_EQ(run(kBin + " calibrate --backend mpi --ranks 1 --out " + out + "/c.yaml", &text), 2);
  EXPECT_FALSE(fs::exists(out));
  fs::remove(bad);
}

}  // namespace
