// Golden transcripts: every scenario in scenarios/ runs once through the CLI
// (`fleetsim run --check-expect`, which must pass), and what `run` printed, the
// head of the run's job.log and what `diagnose` printed are byte-compared with
// tests/golden/<scenario>/. FLEETSIM_UPDATE_GOLDEN=1 rewrites those files instead
// (see docs/testing.md). The scenario list is taken at configure time.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/golden/golden_diff.h"
#include "tests/support/command.h"

namespace fleetsim::test_support {
namespace {

namespace fs = std::filesystem;

constexpr int kJobLogHeadLines = 40;
const std::string kBin = FLEETSIM_BINARY;
const std::string kSrc = FLEETSIM_SOURCE_DIR;
const fs::path kGoldenDir = fs::path(kSrc) / "tests" / "golden";
constexpr const char* kUpdateSwitch = "FLEETSIM_UPDATE_GOLDEN";

// The scenario names CMake found in scenarios/*.yaml ("a,b,c").
std::vector<std::string> scenario_names() {
  std::vector<std::string> out;
  std::stringstream list(FLEETSIM_GOLDEN_SCENARIOS);
  for (std::string name; std::getline(list, name, ',');)
    if (!name.empty()) out.push_back(name);
  return out;
}

bool updating() {
  const char* v = std::getenv(kUpdateSwitch);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first `n` lines of `text`, each with its newline.
std::string head(const std::string& text, int n) {
  size_t end = 0;
  for (int i = 0; i < n && end < text.size(); ++i) {
    const size_t nl = text.find('\n', end);
    end = nl == std::string::npos ? text.size() : nl + 1;
  }
  return text.substr(0, end);
}

// Runs `args` with the work folder as the current directory; what it printed,
// then "exit N".
std::string transcript(const fs::path& work, const std::string& args, int* exit_code) {
  const CommandResult r = run_command("cd " + quote(work.string()) + " && " + quote(kBin) + " " + args);
  *exit_code = r.exit_code;
  return r.out + "exit " + std::to_string(r.exit_code) + "\n";
}

// What the three commands produce for one scenario, path-independent: they run
// in a fresh work folder where `scenarios` links to the source tree's scenarios/,
// with relative paths only. nullopt for a job.log the run did not write.
struct Transcripts {
  std::string run;
  std::optional<std::string> job_log_head;
  std::string diagnose;
  int run_exit = -1;
};

Transcripts make_transcripts(const std::string& name) {
  const fs::path work = fs::temp_directory_path() / ("fleetsim-golden-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(work);
  fs::create_directories(work);
  fs::create_directory_symlink(fs::path(kSrc) / "scenarios", work / "scenarios");
  Transcripts t;
  t.run = transcript(work, "run scenarios/" + name + ".yaml --check-expect --out " + name, &t.run_exit);
  if (std::optional<std::string> log = read_file(work / name / "job.log"))
    t.job_log_head = head(*log, kJobLogHeadLines);
  int diagnose_exit = -1;
  t.diagnose = transcript(work, "diagnose " + name, &diagnose_exit);
  fs::remove_all(work);
  return t;
}

// Compares `now` with the golden file (nullopt: the file must not exist), or
// rewrites the golden file under FLEETSIM_UPDATE_GOLDEN.
void check_golden(const fs::path& golden, const std::optional<std::string>& now) {
  const std::string shown = fs::relative(golden, kSrc).string();
  const std::optional<std::string> before = read_file(golden);
  if (updating()) {
    if (now == before) return;
    if (now) {
      fs::create_directories(golden.parent_path());
      std::ofstream(golden, std::ios::binary) << *now;
    } else {
      fs::remove(golden);
    }
    std::cout << "[golden] " << (now ? "wrote " : "removed ") << shown << "\n";
    return;
  }
  const std::string rerun = "rerun this test with " + std::string(kUpdateSwitch) +
                            "=1 set, then review `git diff tests/golden`";
  if (!before && now) {
    ADD_FAILURE() << "missing golden file " << shown << "; to write it, " << rerun;
  } else if (before && !now) {
    ADD_FAILURE() << "golden file " << shown << " exists but the run wrote no such output; to remove it, " << rerun;
  } else if (before && now && *before != *now) {
    ADD_FAILURE() << "output differs from golden file " << shown << "; if the change is intended, " << rerun << "\n"
                  << short_diff(*before, *now, shown + " (golden)", "now");
  }
}

class Golden : public ::testing::TestWithParam<std::string> {};

// The scenario meets its `expect:` and prints, logs and diagnoses exactly as recorded.
TEST_P(Golden, Transcripts) {
  const std::string& name = GetParam();
  const Transcripts t = make_transcripts(name);
  EXPECT_EQ(t.run_exit, 0) << "`fleetsim run scenarios/" << name
                           << ".yaml --check-expect` failed (exit 1: the run missed the scenario's expect:):\n"
                           << t.run;
  const fs::path dir = kGoldenDir / name;
  check_golden(dir / "run.txt", t.run);
  check_golden(dir / "job.log.head", t.job_log_head);
  check_golden(dir / "diagnose.txt", t.diagnose);
}

INSTANTIATE_TEST_SUITE_P(Scenario, Golden, ::testing::ValuesIn(scenario_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

// Every folder of tests/golden/ belongs to a scenario (a renamed or deleted
// scenario leaves none behind).
TEST(GoldenFiles, EveryFolderIsAScenario) {
  const std::vector<std::string> names = scenario_names();
  ASSERT_FALSE(names.empty()) << "CMake found no scenarios/*.yaml";
  if (!fs::is_directory(kGoldenDir)) return;  // nothing recorded yet: each scenario's test says so
  for (const auto& e : fs::directory_iterator(kGoldenDir)) {
    if (!e.is_directory()) continue;
    const std::string folder = e.path().filename().string();
    EXPECT_NE(std::find(names.begin(), names.end(), folder), names.end())
        << "tests/golden/" << folder << "/ has no scenarios/" << folder << ".yaml: delete the folder";
  }
}

}  // namespace
}  // namespace fleetsim::test_support
