// The source folders' dependency rules (the rooms of docs/architecture.md), checked
// on their #include lines: the engine knows nothing of observers, diagnose reads
// only evidence, the drill sits above the run path and diagnose. Each folder may
// always include its own files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <unistd.h>

namespace fleetsim {
namespace {

namespace fs = std::filesystem;

struct FolderRule {
  std::string folder;                   // relative to the repository root
  std::vector<std::string> may_include;  // folders (besides its own), or single headers, its files may include
};

// The one table of rules: docs/architecture.md draws the same rooms. A folder
// not listed here (sim/cli, tests, bench) may include anything.
const std::vector<FolderRule> kRules = {
    {"include", {}},
    {"sim/core", {"include"}},
    {"sim/program", {"include", "sim/core"}},
    {"sim/model", {"include", "sim/core", "sim/program"}},
    {"sim/exec", {"include", "sim/core", "sim/model", "sim/program"}},
    {"sim/observe", {"include"}},
    // Departure: the loader checks job.nccl (versions, NCCL_ALGO/NCCL_PROTO lists) against
    // the tuning tables that live with the NCCL model.
    {"sim/io", {"include", "sim/model/nccl_model.h"}},
    {"sim/run", {"include", "sim/io", "sim/exec", "sim/observe", "sim/model", "sim/program"}},
    {"sim/diagnose", {"include", "sim/io"}},
    {"sim/report", {"include", "sim/io", "sim/diagnose"}},  // reads a folder through diagnose
    {"sim/drill", {"include", "sim/run", "sim/diagnose", "sim/io", "sim/program"}},
    {"sim/sweep", {"include", "sim/run", "sim/model"}},  // closed forms use the compute-time model
    {"sim/export", {"include"}},
    {"validate", {"include", "sim/run", "sim/model", "sim/observe", "sim/io", "sim/program", "sim/diagnose"}},
};

// Where an include lands, relative to the root: "fleetsim/..." is include/fleetsim/...,
// a path from a top-level folder is itself, another quoted path is next to the file.
// "" for a system or third-party header; "?" for a quoted one found nowhere.
std::string resolve(const fs::path& root, const fs::path& file, char quote, const std::string& path) {
  if (path.rfind("fleetsim/", 0) == 0) return "include/" + path;
  for (const char* top : {"sim/", "include/", "tests/", "validate/", "bench/"}) {
    if (path.rfind(top, 0) == 0) return path;
  }
  if (quote != '"') return "";
  const fs::path beside = file.parent_path() / path;
  if (!fs::exists(beside)) return "?";
  return fs::relative(fs::weakly_canonical(beside), fs::weakly_canonical(root)).generic_string();
}

bool under(const std::string& path, const std::string& folder) { return path.rfind(folder + "/", 0) == 0; }

// Every #include in the rule's folder (recursively) that lands outside what it may
// include, as "FILE:LINE: PATH"; `scanned` counts the files read.
std::vector<std::string> violations(const fs::path& root, const FolderRule& rule, int* scanned) {
  static const std::regex kInclude(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  std::vector<std::string> out;
  *scanned = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / rule.folder)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    ++*scanned;
    std::ifstream in(e.path());
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      std::smatch m;
      if (!std::regex_search(line, m, kInclude)) continue;
      const std::string to = resolve(root, e.path(), m[1].str()[0], m[2].str());
      if (to.empty() || under(to, rule.folder)) continue;
      bool allowed = false;
      for (const std::string& f : rule.may_include) allowed |= under(to, f) || to == f;
      if (!allowed) {
        out.push_back(fs::relative(e.path(), root).generic_string() + ":" + std::to_string(line_no) + ": " +
                      m[2].str());
      }
    }
  }
  return out;
}

TEST(IncludeRules, EveryFolderIncludesOnlyWhatItMay) {
  for (const FolderRule& rule : kRules) {
    int scanned = 0;
    const std::vector<std::string> bad = violations(FLEETSIM_SOURCE_DIR, rule, &scanned);
    EXPECT_GT(scanned, 0) << rule.folder << ": no sources found";
    std::string list;
    for (const std::string& b : bad) list += "\n  " + b;
    EXPECT_TRUE(bad.empty()) << rule.folder << " includes from outside its rule:" << list;
  }
}

// The check itself: in a scratch tree, only the include from a forbidden folder is reported;
// the public headers, the folder's own files, a header beside the file and std are fine.
TEST(IncludeRules, ReportsOnlyForbiddenIncludes) {
  const fs::path root = fs::temp_directory_path() / ("fleetsim_include_rules_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "sim/diagnose");
  std::ofstream(root / "sim/diagnose/local.h") << "#pragma once\n";
  std::ofstream(root / "sim/diagnose/a.cc") << "#include \"sim/diagnose/local.h\"\n"
                                               "#include \"local.h\"\n"
                                               "#include <vector>\n"
                                               "#include \"fleetsim/plan.h\"\n"
                                               "#include \"sim/io/units.h\"\n"
                                               "  #  include \"sim/model/cost_model_factory.h\"\n"
                                               "#include \"missing.h\"\n";
  int scanned = 0;
  const FolderRule* diagnose = nullptr;
  for (const FolderRule& r : kRules)
    if (r.folder == "sim/diagnose") diagnose = &r;
  ASSERT_NE(diagnose, nullptr);
  const std::vector<std::string> bad = violations(root, *diagnose, &scanned);
  fs::remove_all(root);
  EXPECT_EQ(scanned, 2);
  EXPECT_EQ(bad, (std::vector<std::string>{"sim/diagnose/a.cc:6: sim/model/cost_model_factory.h",
                                           "sim/diagnose/a.cc:7: missing.h"}));
}

}  // namespace
}  // namespace fleetsim
