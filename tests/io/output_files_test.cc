// Single output files (a report page, an exported script, a calibration) appear
// whole or not at all: write_file_whole goes through a temporary file beside the
// target, and a failure leaves neither a partial target nor the temporary file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fleetsim/file_read.h"
#include "tests/support/command.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;
using test_support::run_command;
using namespace std::string_literals;

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("fleetsim_outfiles_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int entries(const fs::path& d) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  return n;
}

TEST(WriteFileWhole, ReplacesTheTargetAndLeavesNoTemporaryFile) {
  const fs::path d = temp_dir("ok");
  const fs::path p = d / "page.html";
  std::ofstream(p) << "an older, longer page that must not survive in part";
  std::string text(300000, 'x');
  text += "\n\0end"s;
  EXPECT_FALSE(write_file_whole(p.string(), text, "report page").has_value());
  EXPECT_EQ(slurp(p), text);
  EXPECT_EQ(entries(d), 1);
  fs::remove_all(d);
}

TEST(WriteFileWhole, AMissingFolderIsOneLocatedErrorAndNothingIsWritten) {
  const fs::path d = temp_dir("missing");
  const std::string p = (d / "no" / "page.html").string();
  auto e = write_file_whole(p, "text", "report page");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->to_string(), p + ": error: cannot write the report page: No such file or directory");
  EXPECT_EQ(entries(d), 0);
  fs::remove_all(d);
}

TEST(WriteFileWhole, AFolderInTheWayKeepsTheFolderAndRemovesTheTemporaryFile) {
  const fs::path d = temp_dir("folder");
  fs::create_directories(d / "page.html" / "inside");
  auto e = write_file_whole((d / "page.html").string(), "text", "report page");
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("cannot write the report page: "), std::string::npos) << e->message;
  EXPECT_TRUE(fs::is_directory(d / "page.html" / "inside"));
  EXPECT_EQ(entries(d), 1);
  fs::remove_all(d);
}

// The CLI: `export torch -o` into a missing folder prints one line, exits 2, writes nothing.
TEST(WriteFileWhole, ExportIntoAMissingFolderExitsTwoWithOneLine) {
  const fs::path d = temp_dir("cli");
  const std::string out = (d / "no" / "repro.py").string();
  const auto c = run_command(std::string(FLEETSIM_BINARY) + " export torch " + FLEETSIM_SOURCE_DIR +
                             "/scenarios/step400_hang.yaml -o " + out);
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(c.out, out + ": error: cannot write the exported script: No such file or directory\n");
  EXPECT_EQ(entries(d), 0);
  fs::remove_all(d);
}

}  // namespace
}  // namespace fleetsim
