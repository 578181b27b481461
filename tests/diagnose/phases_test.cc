// FLEETSIM_PHASES=1: `fleetsim diagnose` prints each phase's wall and CPU time to
// stderr (docs/performance.md) and leaves stdout, the report, exactly as without it;
// 0 is off, and any other value is off with one warning line.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <unistd.h>

#include "tests/support/command.h"
#include "tests/support/files.h"

namespace fleetsim {
namespace {

using namespace std::string_literals;

TEST(DiagnosePhases, TimesEachPhaseOnStderrOnly) {
  using test_support::run_command;
  const std::string dumps = test_support::fixture_path("pickle/torch_gloo");
  const std::string err_file =
      (std::filesystem::temp_directory_path() / ("fleetsim_phases_" + std::to_string(::getpid()) + ".txt")).string();
  // run_command sends stderr to stdout: a subshell keeps each run's own redirection.
  const auto plain = run_command("(" + std::string(FLEETSIM_BINARY) + " diagnose " + dumps + " 2>/dev/null)");
  const auto timed = run_command("(FLEETSIM_PHASES=1 " + std::string(FLEETSIM_BINARY) + " diagnose " + dumps +
                                 " 2>" + err_file + ")");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_EQ(timed.exit_code, 0) << timed.out;
  EXPECT_EQ(timed.out, plain.out);  // the report is untouched
  EXPECT_EQ(timed.out.find("phase "), std::string::npos);
  const std::string err = test_support::slurp(err_file);
  std::filesystem::remove(err_file);
  for (const char* phase : {"read", "timeouts", "divergence alignment", "divergence search", "wait graph",
                            "timing alignment", "late arriver and slow group", "diagnosis (all after the read)",
                            "report"}) {
    EXPECT_NE(err.find("phase "s + phase + ": wall "), std::string::npos) << phase << "\n" << err;
  }
  EXPECT_NE(err.find(" s, cpu "), std::string::npos) << err;
  const auto quiet = run_command("(" + std::string(FLEETSIM_BINARY) + " diagnose " + dumps + " 2>&1 >/dev/null)");
  EXPECT_EQ(quiet.out, "");  // without the variable, nothing on stderr
}

// Runs diagnose on a fixture with FLEETSIM_PHASES set to `value`: (stdout, stderr).
std::pair<std::string, std::string> run_with_phases(const std::string& value) {
  const std::string dumps = test_support::fixture_path("pickle/torch_gloo");
  const std::string err_file =
      (std::filesystem::temp_directory_path() / ("fleetsim_phases_v_" + std::to_string(::getpid()) + ".txt")).string();
  const auto r = test_support::run_command("(FLEETSIM_PHASES='" + value + "' " + std::string(FLEETSIM_BINARY) +
                                           " diagnose " + dumps + " 2>" + err_file + ")");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::string err = test_support::slurp(err_file);
  std::filesystem::remove(err_file);
  return {r.out, err};
}

TEST(DiagnosePhases, ZeroIsOffAndOtherValuesWarnOnce) {
  const auto [plain, plain_err] = run_with_phases("0");
  EXPECT_EQ(plain_err, "");  // 0: off, silently
  for (const std::string value : {"maybe", "yes", "2", ""}) {
    const auto [out, err] = run_with_phases(value);
    EXPECT_EQ(out, plain) << value;  // the report is untouched
    EXPECT_EQ(err, "fleetsim: FLEETSIM_PHASES=" + value +
                       " ignored (1 prints the phase times, 0 or unset does not)\n")
        << value;  // one line, and no phase times
  }
}

}  // namespace
}  // namespace fleetsim
