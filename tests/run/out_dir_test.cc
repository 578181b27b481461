// The run folder's safety rules through the CLI (sim/run/out_dir.h): fleetsim
// deletes only what it wrote, refuses `.`, `..`, `/`, the home folder and the
// scenario's folder, needs --force to replace an earlier run, writes `DIR/` for
// `--out DIR/`, and leaves no DIR.tmp-PID behind after SIGINT, SIGTERM, SIGKILL
// (swept by the next run), a failed final move, or a full file system.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/command.h"
#include "tests/support/files.h"

namespace fs = std::filesystem;

namespace fleetsim {
namespace {

using test_support::run_command;
using test_support::slurp;

const std::string kBin = FLEETSIM_BINARY;
// A long run (never finishes within a test) with a small folder.
const char* const kLong = " --set job.steps=10000000 --outputs summary,steps --executor event";

// A fresh folder holding s.yaml (a one-second scenario) and keep.txt.
class OutDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / ("fleetsim_outdir_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    fs::copy_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_fixed.yaml", root_ / "s.yaml");
    std::ofstream(root_ / "keep.txt") << "mine\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  // Runs `fleetsim ARGS` in the folder (HOME set to `home`, if given).
  test_support::CommandResult fleetsim(const std::string& args, const std::string& home = "") const {
    const std::string env = home.empty() ? "" : "HOME=" + home + " ";
    return run_command("cd " + root_.string() + " && " + env + kBin + " " + args);
  }
  // Starts `fleetsim run s.yaml --out OUT EXTRA` in the folder; stderr goes to err.txt.
  pid_t start(const std::string& out, const std::string& extra) const {
    const std::string cmd = "exec " + kBin + " run s.yaml --out " + out + extra + " >out.txt 2>err.txt";
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::chdir(root_.c_str()) != 0) ::_exit(127);
      ::signal(SIGINT, SIG_DFL);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }
  // Waits until the run's temp folder holds its marker (true) or the process
  // ended (false). The folder alone is not enough: a run killed between making
  // the folder and writing the marker leaves a folder no later run may claim.
  bool wait_for_tmp(pid_t pid, const std::string& out) const {
    const fs::path marker = root_ / (out + ".tmp-" + std::to_string(pid)) / ".fleetsim-run";
    for (;;) {
      if (fs::exists(marker)) return true;
      if (::waitpid(pid, nullptr, WNOHANG) == pid) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  static int wait_exit(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Names in the folder starting with `prefix`.
  std::vector<std::string> named(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(root_))
      if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().filename().string());
    return out;
  }
  fs::path root_;
};

// `--out .` once deleted the whole current folder, scenario included; `..`,
// `/` and the home folder are as dangerous. All are refused, even with --force.
TEST_F(OutDir, CurrentParentRootAndHomeAreRefusedEvenWithForce) {
  fs::create_directories(root_ / "home");
  const std::string home = (root_ / "home").string();
  for (const std::string& out : std::vector<std::string>{".", "./", "..", "/", "home", home + "/", "sub/.."}) {
    for (const std::string force : {"", " --force"}) {
      const auto r = fleetsim("run s.yaml --out " + out + force, (root_ / "home").string());
      EXPECT_EQ(r.exit_code, 2) << out << force << "\n" << r.out;
      EXPECT_NE(r.out.find("error: refusing to write the run here"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
    }
  }
  EXPECT_EQ(slurp(root_ / "keep.txt"), "mine\n");
  EXPECT_TRUE(fs::exists(root_ / "s.yaml"));
  EXPECT_TRUE(fs::exists(root_ / "home"));
  EXPECT_TRUE(named("..tmp-").empty() && named(".tmp-").empty());
}

// The folder holding the scenario (or any folder above it) is refused.
TEST_F(OutDir, TheScenariosFolderIsRefused) {
  fs::create_directories(root_ / "sub");
  fs::copy_file(root_ / "s.yaml", root_ / "sub" / "s.yaml");
  const auto r = fleetsim("run sub/s.yaml --out sub --force");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("sub: error: refusing to write the run here: it is the scenario file"), std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(root_ / "sub" / "s.yaml"));
}

// An existing folder or file that fleetsim did not write was silently replaced;
// now it is refused before anything runs, untouched.
TEST_F(OutDir, AFolderOrFileNotARunIsRefused) {
  fs::create_directories(root_ / "notes");
  std::ofstream(root_ / "notes" / "todo.txt") << "x\n";
  auto r = fleetsim("run s.yaml --out notes --force");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "notes: error: exists and is not a fleetsim run folder (no .fleetsim-run); remove it yourself or "
                   "give --out a new folder\n");
  EXPECT_EQ(slurp(root_ / "notes" / "todo.txt"), "x\n");
  r = fleetsim("run s.yaml --out keep.txt --force");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("keep.txt: error: exists and is not a folder"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(root_ / "keep.txt"), "mine\n");
  EXPECT_EQ(named("notes.tmp-").size() + named("keep.txt.tmp-").size(), 0u);
}

// An earlier run is replaced only with --force.
TEST_F(OutDir, AnEarlierRunIsReplacedOnlyWithForce) {
  ASSERT_EQ(fleetsim("run s.yaml --out r").exit_code, 0);
  EXPECT_NE(slurp(root_ / "r" / ".fleetsim-run").find("fleetsim run folder, written by fleetsim "), std::string::npos);
  std::ofstream(root_ / "r" / "old.txt") << "old\n";
  auto r = fleetsim("run s.yaml --out r");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "r: error: holds an earlier fleetsim run; give --force to replace it, or --out a new folder\n");
  EXPECT_TRUE(fs::exists(root_ / "r" / "old.txt"));
  r = fleetsim("run s.yaml --out r --force");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(root_ / "r" / "old.txt"));
  EXPECT_TRUE(fs::exists(root_ / "r" / "summary.json"));
  EXPECT_TRUE(named("r.tmp-").empty());
}

// `--out newdir/` used to fail after the whole run (the temp folder was built
// inside the target); it writes newdir, through a sibling temp folder.
TEST_F(OutDir, ATrailingSlashWritesTheFolder) {
  const auto r = fleetsim("run s.yaml --out nested/newdir/");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("outputs    nested/newdir/ (summary.json"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(root_ / "nested" / "newdir" / "summary.json"));
  for (const auto& e : fs::directory_iterator(root_ / "nested" / "newdir"))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  EXPECT_EQ(fleetsim("run s.yaml --out nested/newdir/ --force").exit_code, 0);
}

// SIGINT and SIGTERM once left a DIR.tmp-PID nothing cleaned up; now the run
// removes it and exits 128 + the signal with one line on stderr.
TEST_F(OutDir, SigintAndSigtermRemoveTheTempFolder) {
  for (const int sig : {SIGINT, SIGTERM}) {
    const pid_t pid = start("sig", kLong);
    ASSERT_TRUE(wait_for_tmp(pid, "sig")) << slurp(root_ / "err.txt");
    ::kill(pid, sig);
    EXPECT_EQ(wait_exit(pid), 128 + sig);
    const std::string err = slurp(root_ / "err.txt");
    const std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    EXPECT_EQ(err, "fleetsim: interrupted by " + name + "; removed the unfinished run folder sig.tmp-" +
                       std::to_string(pid) + "\n");
    EXPECT_TRUE(named("sig").empty()) << "left behind: " << named("sig").front();
  }
}

// SIGKILL cannot be caught: its DIR.tmp-PID is swept by the next run next to DIR.
TEST_F(OutDir, TheNextRunSweepsTheTempFolderOfAKilledRun) {
  const pid_t pid = start("k", kLong);
  ASSERT_TRUE(wait_for_tmp(pid, "k"));
  ::kill(pid, SIGKILL);
  EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);
  const std::string stale = "k.tmp-" + std::to_string(pid);
  ASSERT_TRUE(fs::exists(root_ / stale / ".fleetsim-run"));
  fs::create_directories(root_ / "k.tmp-1");  // a live process's (init): left alone
  std::ofstream(root_ / "k.tmp-1" / ".fleetsim-run") << "x\n";
  const auto r = fleetsim("run s.yaml --out k");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("note: removed " + stale + ", left unfinished by process " + std::to_string(pid) +
                       ", which is gone\n"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(root_ / stale));
  EXPECT_TRUE(fs::exists(root_ / "k.tmp-1"));
  EXPECT_TRUE(fs::exists(root_ / "k" / "summary.json"));
}

// A final move that fails keeps the finished run and says where it is.
TEST_F(OutDir, AFailedFinalMoveKeepsTheRun) {
  const pid_t pid = start("late", " --set job.steps=30000 --outputs summary,steps --executor event");
  ASSERT_TRUE(wait_for_tmp(pid, "late"));
  ::kill(pid, SIGSTOP);  // someone else's folder appears at --out while the run is on
  fs::create_directories(root_ / "late");
  std::ofstream(root_ / "late" / "theirs.txt") << "theirs\n";
  ::kill(pid, SIGCONT);
  EXPECT_EQ(wait_exit(pid), 2);
  const std::string tmp = "late.tmp-" + std::to_string(pid);
  EXPECT_EQ(slurp(root_ / "err.txt"), "late: error: appeared during the run and is not an earlier run this one may "
                                      "replace; the finished run is kept in " + tmp + "\n");
  EXPECT_TRUE(fs::exists(root_ / tmp / "summary.json"));
  EXPECT_EQ(slurp(root_ / "late" / "theirs.txt"), "theirs\n");
}

// A file system that fills up (here a file-size limit: write() fails with
// EFBIG) leaves nothing half-written and says what failed, in one line.
TEST_F(OutDir, AFullFileSystemLeavesNothing) {
  for (const std::string outputs : {"", " --outputs summary,steps --set job.steps=30000"}) {
    const std::string cmd = "cd " + root_.string() + " && /bin/sh -c 'trap \"\" XFSZ; ulimit -f 64; exec " + kBin +
                            " run s.yaml --out full" + outputs + "'";
    fs::remove_all(root_ / "full");
    const auto c = run_command(cmd);
    EXPECT_EQ(c.exit_code, 2) << c.out;
    EXPECT_NE(c.out.find("full: error: cannot write "), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("; nothing was kept\n"), std::string::npos) << c.out;
    EXPECT_EQ(c.out.find('\n'), c.out.size() - 1) << "one line: " << c.out;
    EXPECT_TRUE(named("full").empty()) << "left behind: " << named("full").front();
  }
}

// validate checks its --out the same way, before the real run starts.
TEST_F(OutDir, ValidateChecksItsFolderFirst) {
  fs::create_directories(root_ / "notes");
  const std::string scenario = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/validate/crash_2ranks.yaml";
  for (const std::string out : {".", "notes"}) {
    const auto r = fleetsim("validate " + scenario + " --backend mpi --force --out " + out);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(out + ": error: "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("real "), std::string::npos) << "ran: " << r.out;
  }
  EXPECT_EQ(slurp(root_ / "keep.txt"), "mine\n");
  EXPECT_TRUE(named("notes.tmp-").empty());
}

// Without --out, rerunning a scenario replaces its own earlier run in runs/<name>
// (fleetsim's default place); a folder there that fleetsim did not write is still refused.
TEST_F(OutDir, TheDefaultFolderIsReplacedByARerunButNothingElse) {
  ASSERT_EQ(fleetsim("run s.yaml --set job.steps=3").exit_code, 0);
  ASSERT_TRUE(fs::exists(root_ / "runs/s/.fleetsim-run"));
  const auto again = fleetsim("run s.yaml --set job.steps=3");
  EXPECT_EQ(again.exit_code, 0) << again.out;
  fs::remove_all(root_ / "runs/s");
  fs::create_directories(root_ / "runs/s");
  std::ofstream(root_ / "runs/s/notes.txt") << "mine\n";
  const auto refused = fleetsim("run s.yaml --set job.steps=3");
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_EQ(slurp(root_ / "runs/s/notes.txt"), "mine\n");
}

}  // namespace
}  // namespace fleetsim
