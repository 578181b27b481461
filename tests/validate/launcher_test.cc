// The launcher (validate/launcher.h) gives a job a temporary directory of its own and
// removes it once nothing of the job is left, even when the job is killed at its
// deadline: what mpirun keeps there (its session folder) never outlives the run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/files.h"
#include "validate/launcher.h"

namespace fleetsim::validate {
namespace {

namespace fs = std::filesystem;

// Sets TMPDIR for this process while in scope, then puts back what was there.
class TmpdirSetTo {
 public:
  explicit TmpdirSetTo(const std::string& dir) {
    if (const char* was = std::getenv("TMPDIR")) was_ = was;
    ::setenv("TMPDIR", dir.c_str(), 1);
  }
  ~TmpdirSetTo() {
    if (was_.empty()) ::unsetenv("TMPDIR");
    else ::setenv("TMPDIR", was_.c_str(), 1);
  }
  TmpdirSetTo(const TmpdirSetTo&) = delete;
  TmpdirSetTo& operator=(const TmpdirSetTo&) = delete;

 private:
  std::string was_;
};

// A job that writes into its TMPDIR (a file and a folder, as mpirun's session folder)
// and then hangs: killed at its idle limit, it leaves nothing in the temporary directory.
TEST(Launcher, AKilledJobLeavesNothingInTheTemporaryDirectory) {
  const fs::path tmp = test_support::scratch_dir() / "tmpdir";
  fs::create_directories(tmp);
  const fs::path seen = test_support::scratch_dir() / "seen";
  LaunchSpec spec;
  spec.argv = {"sh", "-c",
               "echo \"$TMPDIR\" > '" + seen.string() +
                   "'; mkdir -p \"$TMPDIR/ompi.host.0/jf.0\" && touch \"$TMPDIR/ompi.host.0/jf.0/contact.txt\"; "
                   "exec sleep 30"};
  spec.idle_limit_s = 0.5;
  std::optional<LaunchResult> r;
  {
    TmpdirSetTo set(tmp.string());
    r = launch(spec);
  }
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->killed);
  const std::string job_tmp = test_support::slurp(seen);
  ASSERT_FALSE(job_tmp.empty());
  EXPECT_EQ(job_tmp.rfind((tmp / "fleetsim-job.").string(), 0), 0u) << job_tmp;  // one of its own, inside TMPDIR
  EXPECT_TRUE(fs::is_empty(tmp)) << fs::directory_iterator(tmp)->path();
}

// A job that ends by itself: its temporary directory goes too, and its exit status is kept.
TEST(Launcher, AJobThatEndsLeavesNothingEither) {
  const fs::path tmp = test_support::scratch_dir() / "tmpdir-done";
  fs::create_directories(tmp);
  LaunchSpec spec;
  spec.argv = {"sh", "-c", "touch \"$TMPDIR/left\"; exit 3"};
  std::optional<LaunchResult> r;
  {
    TmpdirSetTo set(tmp.string());
    r = launch(spec);
  }
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->killed);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_TRUE(fs::is_empty(tmp));
}

}  // namespace
}  // namespace fleetsim::validate
