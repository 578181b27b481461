// The golden transcript of `fleetsim calibrate --from-nccl-tests` on a committed
// published log: what it printed (the fit, the per-size errors) and the
// calibration file it wrote are byte-compared with
// tests/golden/calibrate-from-nccl-tests.{txt,yaml}; FLEETSIM_UPDATE_GOLDEN=1
// rewrites them instead (docs/testing.md).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "tests/golden/golden_diff.h"
#include "tests/support/command.h"

namespace fleetsim::test_support {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void compare(const fs::path& golden, const std::string& now) {
  const char* update = std::getenv("FLEETSIM_UPDATE_GOLDEN");
  const std::optional<std::string> before = slurp(golden);
  if (update != nullptr && *update != '\0' && std::string(update) != "0") {
    if (before != now) {
      std::ofstream(golden, std::ios::binary) << now;
      std::cout << "[golden] wrote " << golden.filename().string() << "\n";
    }
    return;
  }
  ASSERT_TRUE(before.has_value()) << "missing golden file " << golden
                                  << "; rerun with FLEETSIM_UPDATE_GOLDEN=1 and review `git diff tests/golden`";
  EXPECT_EQ(*before, now) << "output differs from " << golden
                          << "; if intended, rerun with FLEETSIM_UPDATE_GOLDEN=1 and review `git diff tests/golden`\n"
                          << short_diff(*before, now, "golden", "now");
}

// Runs in a fresh folder where `logs` links to the committed logs, so that the
// transcript holds relative paths only.
TEST(CalibrateGolden, DgxH100PublishedLog) {
  const fs::path work = fs::temp_directory_path() / ("fleetsim-calgolden-" + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  fs::create_directory_symlink(fs::path(FLEETSIM_SOURCE_DIR) / "tests" / "fixtures" / "nccl-tests-logs", work / "logs");
  const CommandResult r = run_command("cd '" + work.string() + "' && '" + FLEETSIM_BINARY +
                                      "' calibrate --from-nccl-tests logs/dgx-h100-1node-all_reduce.log"
                                      " --out calibration.yaml");
  const fs::path golden = fs::path(FLEETSIM_SOURCE_DIR) / "tests" / "golden";
  compare(golden / "calibrate-from-nccl-tests.txt", r.out + "exit " + std::to_string(r.exit_code) + "\n");
  compare(golden / "calibrate-from-nccl-tests.yaml", slurp(work / "calibration.yaml").value_or("(not written)\n"));
  fs::remove_all(work);
}

}  // namespace
}  // namespace fleetsim::test_support
