// `fleetsim validate --backend torch` for real: the exported scripts run under
// torchrun on 4 gloo processes (torch from the repository's .venv, made by
// scripts/venv.sh; skipped without it), each case agreeing with the simulator on
// outcome, hang step and culprit, and no process outliving the command.
#include <gtest/gtest.h>

#include <algorithm>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/diagnose/diagnose.h"
#include "tests/support/command.h"
#include "tests/support/files.h"

namespace fs = std::filesystem;

namespace {

const std::string kBin = FLEETSIM_BINARY;
const std::string kSrc = FLEETSIM_SOURCE_DIR;
const std::string kPython = fleetsim::test_support::venv_python();

bool have_torch() {
  static const bool ok = fleetsim::test_support::python_imports("torch.distributed");
  return ok;
}

std::string out_dir(const std::string& name) {
  return (fs::temp_directory_path() / ("fleetsim-torch-" + std::to_string(::getpid())) / name).string();
}

// Live processes whose command line mentions `marker`.
int alive(const std::string& marker) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "cmdline");
    const std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ifstream st(e.path() / "stat");
    std::string stat;
    std::getline(st, stat);
    if (stat.find(") Z") == std::string::npos && cmd.find(marker) != std::string::npos) ++n;
  }
  return n;
}

struct Side {
  std::string outcome;
  int64_t steps = -1;
  int64_t hang_step = -1;
  int first_timeout = -1;
  std::string cause;
  std::vector<int> culprit;
};

Side side(const std::string& dir) {
  std::ifstream in(dir + "/summary.json");
  const auto s = nlohmann::json::parse(in);
  Side x;
  x.outcome = s["outcome"];
  x.steps = s["steps_completed"];
  if (s.contains("hang")) {
    x.hang_step = s["hang"]["step"];
    x.first_timeout = s["hang"]["first_timeout_rank"];
  }
  auto d = fleetsim::diagnose::diagnose_dir(dir);
  if (d.ok()) {
    x.cause = fleetsim::diagnose::to_string(d->cause);
    x.culprit = d->culprit_ranks;
  }
  return x;
}

struct Both {
  Side real, sim;
  std::string text;
};

// Runs the 4-rank scenario under validate --backend torch (3 s watchdog).
Both validate(const std::string& scenario, const std::string& name) {
  const std::string out = out_dir(name);
  // A temporary directory of the run's own, to see what the job leaves in it.
  const fs::path tmp = fs::path(out).parent_path() / (name + "-tmpdir");
  fs::create_directories(tmp);
  Both b;
  auto r = fleetsim::test_support::run_command("TMPDIR=" + tmp.string() + " " + kBin + " validate " + kSrc +
                                               "/scenarios/validate/" + scenario +
                                               " --backend torch --python " + kPython + " --timeout 3s --grace 3s" +
                                               " --out " + out);
  b.text = r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(alive(out), 0) << "a process of the job outlived `fleetsim validate`";
  // torchrun's per-rank files go to the run's folder (--log-dir), not to the temporary directory.
  for (const auto& e : fs::directory_iterator(tmp))
    EXPECT_NE(e.path().filename().string().rfind("torchelastic_", 0), 0u) << e.path() << " left behind";
  EXPECT_TRUE(fs::is_directory(out + "/torchelastic")) << r.out;
  fs::remove_all(tmp);
  if (r.exit_code != 0) return b;
  b.real = side(out + "/real");
  b.sim = side(out + "/sim");
  return b;
}

// Removes a test's folder unless it failed (then its torchrun.log is worth a look).
void cleanup(const std::string& name) {
  if (::testing::Test::HasFailure()) return;
  fleetsim::test_support::remove_with_empty_parent(out_dir(name));  // and this test process's folder, once empty
}

#define SKIP_WITHOUT_TORCH() \
  if (!have_torch()) GTEST_SKIP() << "no torch at " << kPython << " (scripts/venv.sh makes it)"

// The founding case: rank 0's extra world all-reduce at step 40. Under gloo it
// waits for peers that never come (the others wait in the tp and dp groups), as
// under NCCL; PyTorch's own dumps name rank 0.
TEST(TorchValidate, FoundingCaseHangsAtStep40OnRank0) {
  SKIP_WITHOUT_TORCH();
  const Both b = validate("step40_hang_4ranks.yaml", "hang");
  EXPECT_EQ(b.real.outcome, "hang") << b.text;
  EXPECT_EQ(b.sim.outcome, "hang") << b.text;
  EXPECT_EQ(b.real.hang_step, 40) << b.text;
  EXPECT_EQ(b.sim.hang_step, 40) << b.text;
  // Rank 0's wait starts one scaled forward pass (15 ms) before that of its tp partner, rank 1,
  // which blocks on rank 0 in tp_activations at step 41; on a loaded machine rank 1's timer
  // has been seen to expire first (ctest -j2, two real jobs at once). Either way the first
  // timeout is a rank waiting on rank 0; ranks 2 and 3 start theirs a backward pass later.
  EXPECT_TRUE(b.real.first_timeout == 0 || b.real.first_timeout == 1) << b.text;
  EXPECT_EQ(b.sim.first_timeout, 0) << b.text;
  // The real side's cause is not compared: whether a rank's watchdog takes its process
  // down before every peer has dumped is a race in the real job, and when it wins the
  // real log shows an exit that diagnose reads as rank_crashed. The culprit is stable.
  EXPECT_EQ(b.sim.cause, "extra_collective") << b.text;
  EXPECT_EQ(b.real.culprit, std::vector<int>{0}) << b.text;
  EXPECT_EQ(b.sim.culprit, std::vector<int>{0}) << b.text;
  cleanup("hang");
}

// The fix: every rank runs the loss all-reduce; the job completes on both sides.
TEST(TorchValidate, FixedCaseCompletes) {
  SKIP_WITHOUT_TORCH();
  const Both b = validate("step40_fixed_4ranks.yaml", "fixed");
  EXPECT_EQ(b.real.outcome, "completed") << b.text;
  EXPECT_EQ(b.sim.outcome, "completed") << b.text;
  EXPECT_EQ(b.real.hang_step, -1);
  EXPECT_TRUE(b.sim.culprit.empty()) << b.text;
  EXPECT_NE(b.real.cause, "extra_collective") << b.text;
  cleanup("fixed");
}

// A data loader that never returns on rank 2 at step 8: its peers time out.
TEST(TorchValidate, StallHangsAtStep8OnRank2) {
  SKIP_WITHOUT_TORCH();
  const Both b = validate("stall_4ranks.yaml", "stall");
  EXPECT_EQ(b.real.outcome, "hang") << b.text;
  EXPECT_EQ(b.sim.outcome, "hang") << b.text;
  EXPECT_EQ(b.real.hang_step, 8) << b.text;
  EXPECT_EQ(b.sim.hang_step, 8) << b.text;
  // The real side's cause is not compared: whether a rank's watchdog takes its process
  // down before every peer has dumped is a race in the real job, and when it wins the
  // real log shows an exit that diagnose reads as rank_crashed. The culprit is stable.
  EXPECT_EQ(b.sim.cause, "rank_stalled") << b.text;
  EXPECT_EQ(b.real.culprit, std::vector<int>{2}) << b.text;
  EXPECT_EQ(b.sim.culprit, std::vector<int>{2}) << b.text;
  cleanup("stall");
}

// Rank 1's process dies (SIGKILL) at step 6.
TEST(TorchValidate, CrashIsACrashOfRank1) {
  SKIP_WITHOUT_TORCH();
  const Both b = validate("crash_4ranks.yaml", "crash");
  EXPECT_EQ(b.real.outcome, "crash") << b.text;
  EXPECT_EQ(b.sim.outcome, "crash") << b.text;
  EXPECT_EQ(b.real.cause, "rank_crashed") << b.text;
  EXPECT_EQ(b.sim.cause, "rank_crashed") << b.text;
  EXPECT_EQ(b.real.culprit, std::vector<int>{1}) << b.text;
  EXPECT_EQ(b.sim.culprit, std::vector<int>{1}) << b.text;
  EXPECT_EQ(b.real.steps, 5) << b.text;  // every gloo call holds the CPU on both sides
  EXPECT_EQ(b.sim.steps, 5) << b.text;
  cleanup("crash");
}

// Rank 0 skips one send at step 8: the receiver runs a message ahead and waits
// at the last step. Both recorders leave send/recv out (gloo's in torch 2.15
// records none, and so does the simulator's under job.backend: gloo), and gloo's
// recv holds the Python thread on both sides, so rank 2 never enqueues the tp
// all-reduce after it: both sides' dumps show rank 3 alone in it, and diagnose
// names rank 2 on both. (The cause is not compared: the real side's depends on
// the order in which the processes' exits reach job.log; runs have read
// rank_crashed and rank_stalled, the simulated side reads rank_stalled.)
TEST(TorchValidate, P2pSkipHangsAtTheLastStep) {
  SKIP_WITHOUT_TORCH();
  const Both b = validate("pp_skip_4ranks.yaml", "p2p");
  EXPECT_EQ(b.real.outcome, "hang") << b.text;
  EXPECT_EQ(b.sim.outcome, "hang") << b.text;
  EXPECT_EQ(b.real.hang_step, 16) << b.text;
  EXPECT_EQ(b.sim.hang_step, 16) << b.text;
  EXPECT_EQ(b.real.first_timeout, 2) << b.text;
  EXPECT_EQ(b.sim.first_timeout, 2) << b.text;
  EXPECT_EQ(b.real.culprit, std::vector<int>{2}) << b.text;
  EXPECT_EQ(b.sim.culprit, std::vector<int>{2}) << b.text;
  cleanup("p2p");
}

// The pure data-parallel founding case (rank 2's 4-byte metric all-reduce meets
// its peers' gradient all-reduce): gloo aborts on the size mismatch, and the
// simulated side, run with gloo's semantics (job.backend: gloo), crashes at the
// same step with the same rank at fault; under NCCL both would hang.
TEST(TorchValidate, SizeMismatchCrashesOnBothSidesUnderGloo) {
  SKIP_WITHOUT_TORCH();
  const Both b = validate("metric_dp_4ranks.yaml", "mismatch");
  EXPECT_EQ(b.real.outcome, "crash") << b.text;
  EXPECT_EQ(b.sim.outcome, "crash") << b.text;
  EXPECT_EQ(b.sim.culprit, std::vector<int>{2}) << b.text;
  EXPECT_NE(std::find(b.real.culprit.begin(), b.real.culprit.end(), 2), b.real.culprit.end()) << b.text;
  EXPECT_NE(b.text.find("steps completed        24                                           24"), std::string::npos)
      << b.text;
  cleanup("mismatch");
}

// Bad input is refused before anything starts: no Python with torch.
TEST(TorchValidate, MissingPythonIsAOneLineError) {
  const std::string out = out_dir("nopython");
  auto r = fleetsim::test_support::run_command(kBin + " validate " + kSrc +
                                               "/scenarios/validate/step40_hang_4ranks.yaml --backend torch "
                                               "--python /nonexistent/python --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--backend torch: error: no Python at '/nonexistent/python'"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
