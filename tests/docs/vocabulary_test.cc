// The docs name exactly what the code's tables hold: fault kinds, causes,
// collective models, outputs and CSV columns. Each vocabulary lives in one
// table in include/fleetsim/; a docs table marked `<!-- vocabulary: NAME -->`
// must list the same names (and, where the docs repeat them, the same words).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fleetsim/cause.h"
#include "fleetsim/fault.h"
#include "fleetsim/isolation.h"
#include "fleetsim/record.h"
#include "fleetsim/scenario.h"

namespace fleetsim {
namespace {

std::string read_doc(const std::string& name) {
  std::ifstream in(std::string(FLEETSIM_SOURCE_DIR) + "/docs/" + name);
  EXPECT_TRUE(in.good()) << "cannot read docs/" << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The cells of every table row that follows a `<!-- vocabulary: NAME -->` line
// (header and separator rows skipped), with the backticks of each cell removed.
std::vector<std::vector<std::string>> marked_rows(const std::string& doc, const std::string& vocabulary) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(doc);
  bool inside = false;
  int row = 0;
  for (std::string line; std::getline(in, line);) {
    if (line == "<!-- vocabulary: " + vocabulary + " -->") {
      inside = true, row = 0;
      continue;
    }
    if (!inside) continue;
    if (line.empty() || line[0] != '|') {
      inside = false;
      continue;
    }
    if (row++ < 2) continue;  // header and |---|
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] != '|') {
        if (line[i] != '`') cell += line[i];
        continue;
      }
      const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
      cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
      cell.clear();
    }
    rows.push_back(cells);
  }
  return rows;
}

std::set<std::string> first_cells(const std::vector<std::vector<std::string>>& rows) {
  std::set<std::string> names;
  for (const auto& r : rows) names.insert(r.at(0));
  return names;
}

// docs/scenario-format.md's fault tables name every fault kind the loader accepts, and no other.
TEST(Vocabulary, FaultKindsInTheScenarioFormatMatchTheTable) {
  std::set<std::string> table;
  for (const FaultSpec& f : kFaultSpecs) table.insert(f.name);
  const auto rows = marked_rows(read_doc("scenario-format.md"), "faults");
  ASSERT_FALSE(rows.empty()) << "no <!-- vocabulary: faults --> table";
  EXPECT_EQ(first_cells(rows), table);
}

// docs/diagnose.md's table of causes is the code's table, name for name and word for word, in order.
TEST(Vocabulary, CausesInDiagnoseDocsMatchTheTable) {
  const auto rows = marked_rows(read_doc("diagnose.md"), "causes");
  ASSERT_EQ(rows.size(), std::size(kCauses));
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at(0), kCauses[i].name);
    EXPECT_EQ(rows[i].at(1), kCauses[i].meaning) << kCauses[i].name;
  }
}

// docs/scenario-format.md's collective models are the loader's.
TEST(Vocabulary, CollectiveModelsInTheScenarioFormatMatchTheTable) {
  std::set<std::string> table;
  for (const CollectiveModelSpec& m : kCollectiveModels) table.insert(m.name);
  EXPECT_EQ(first_cells(marked_rows(read_doc("scenario-format.md"), "models")), table);
}

// docs/run-record.md's files are the output table: --outputs name, file, default and lockstep.
TEST(Vocabulary, OutputsInTheRunRecordDocsMatchTheTable) {
  const auto rows = marked_rows(read_doc("run-record.md"), "outputs");
  ASSERT_EQ(rows.size(), std::size(kOutputs));
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at(0), kOutputs[i].cli_name);
    EXPECT_EQ(rows[i].at(1), kOutputs[i].file_name);
    EXPECT_EQ(rows[i].at(2), kOutputs[i].bounded_default);
    EXPECT_EQ(rows[i].at(3), kOutputs[i].lockstep ? "yes" : "no");
  }
}

// docs/run-record.md quotes the CSV headers the writers print.
TEST(Vocabulary, CsvHeadersInTheRunRecordDocsMatchTheColumns) {
  const std::string doc = read_doc("run-record.md");
  for (const std::string& header :
       {csv_header(columns::kSteps), csv_header(columns::kTelemetry, columns::kTelemetrySim)}) {
    const std::string quoted = "`" + header.substr(0, header.size() - 1) + "`";
    EXPECT_NE(doc.find(quoted), std::string::npos) << "docs/run-record.md does not quote " << quoted;
  }
}

// docs/scenario-format.md's backends table is the code's, name for name and word for word.
TEST(Vocabulary, BackendsInTheScenarioFormatMatchTheTable) {
  const auto rows = marked_rows(read_doc("scenario-format.md"), "backends");
  ASSERT_EQ(rows.size(), std::size(kCommBackends)) << "the <!-- vocabulary: backends --> table";
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at(0), kCommBackends[i].name);
    EXPECT_EQ(rows[i].at(1), kCommBackends[i].what);
  }
}

// docs/scenario-format.md's flight-recorder table is kFrSettings, key, values and words.
TEST(Vocabulary, FlightRecorderSettingsInTheScenarioFormatMatchTheTable) {
  const auto rows = marked_rows(read_doc("scenario-format.md"), "flight-recorder");
  ASSERT_EQ(rows.size(), std::size(kFrSettings)) << "the <!-- vocabulary: flight-recorder --> table";
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at(0), kFrSettings[i].key);
    EXPECT_EQ(rows[i].at(1), std::string(kFrSettings[i].values[0]) + ", " + kFrSettings[i].values[1]);
    EXPECT_EQ(rows[i].at(2), kFrSettings[i].what);
  }
}

// docs/isolation-order.md teaches the steps diagnose and the drill name: the same
// numbers and names, in the same order.
TEST(Vocabulary, IsolationStepsInTheDocsMatchTheTable) {
  const auto rows = marked_rows(read_doc("isolation-order.md"), "isolation-steps");
  ASSERT_EQ(rows.size(), static_cast<size_t>(kIsolationStepCount)) << "the <!-- vocabulary: isolation-steps --> table";
  for (int i = 0; i < kIsolationStepCount; ++i) {
    EXPECT_EQ(static_cast<int>(kIsolationSteps[i].step), i + 1);
    EXPECT_EQ(rows[static_cast<size_t>(i)].at(0), std::to_string(i + 1));
    EXPECT_EQ(rows[static_cast<size_t>(i)].at(1), kIsolationSteps[i].name);
  }
}

}  // namespace
}  // namespace fleetsim
