// fleetsim report: the heat map's folding (rank rows, binned ranges with
// min/mean/max, outliers kept), and the page on real runs of the founding case at
// 32 and 16,384 ranks: what it shows, that it is self-contained, bounded in size
// and byte-identical from the same folder; bad input exits 2.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sim/report/heatmap.h"
#include "sim/report/report.h"
#include "tests/support/command.h"
#include "tests/support/files.h"

namespace fleetsim::report {
namespace {

namespace fs = std::filesystem;
using diagnose::TelemetryRow;
using test_support::run_command;
using test_support::slurp;

constexpr int64_t kPageBound = 512 * 1024;  // docs/report.md states it

// `ranks` ranks sampled at t = 1..10 s; `idle` reads 0% from t > 5 s, the rest 100%.
std::vector<TelemetryRow> telemetry(int ranks, int idle) {
  std::vector<TelemetryRow> rows;
  for (int t = 1; t <= 10; ++t)
    for (int r = 0; r < ranks; ++r) rows.push_back({double(t), r, r == idle && t > 5 ? 0.0 : 100.0, 0, 0, 0, 1});
  return rows;
}

TEST(ReportHeatMap, FewRanksGetOneRowEach) {
  const HeatMap h = build_heatmap(telemetry(4, 2), {{2, "culprit"}});
  ASSERT_EQ(h.rows.size(), 4u);
  EXPECT_FALSE(h.binned);
  EXPECT_EQ(h.rows[2].label, "rank 2");
  EXPECT_EQ(h.rows[2].why, "culprit");
  ASSERT_EQ(h.col_end_s.size(), 10u);
  EXPECT_EQ(h.layers[0].mean[2 * 10 + 9], level_char(0));    // rank 2 idle at the end
  EXPECT_EQ(h.layers[0].mean[1 * 10 + 9], level_char(100));  // rank 1 busy
}

TEST(ReportHeatMap, ManyRanksAreBinnedWithOutliersKept) {
  const std::vector<TelemetryRow> rows = telemetry(300, 177);
  const std::vector<Outlier> out = find_outliers(rows, {{3, "culprit"}}, 5.0);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].rank, 3);
  EXPECT_EQ(out[1].rank, 177);
  EXPECT_NE(out[1].why.find("idle"), std::string::npos);
  const HeatMap h = build_heatmap(rows, out);
  EXPECT_TRUE(h.binned);
  ASSERT_LE(h.rows.size(), static_cast<size_t>(kMaxRows));
  EXPECT_EQ(h.rows[0].label, "rank 3");
  EXPECT_EQ(h.rows[1].label, "rank 177");
  int covered = 0;
  for (const HeatRow& r : h.rows) covered += r.ranks;
  EXPECT_EQ(covered, 300);
  EXPECT_EQ(h.layers[0].mean[1 * 10 + 9], level_char(0));    // the idle rank's own row
  EXPECT_EQ(h.layers[0].mean[5 * 10 + 9], level_char(100));  // a bin without it
}

TEST(ReportHeatMap, BinnedCellsKeepMinMeanMax) {
  std::vector<TelemetryRow> rows;
  for (int r = 0; r < 256; ++r) rows.push_back({1.0, r, r % 2 == 0 ? 0.0 : 100.0, 0, 0, 0, 1});
  const HeatMap h = build_heatmap(rows, {});
  ASSERT_TRUE(h.binned);
  EXPECT_EQ(h.layers[0].min[0], level_char(0));
  EXPECT_EQ(h.layers[0].max[0], level_char(100));
  EXPECT_EQ(h.layers[0].mean[0], level_char(50));
}

TEST(ReportFormat, RankRanges) {
  EXPECT_EQ(format_rank_ranges({0, 2, 3, 4, 9}), "0, 2-4, 9");
  EXPECT_EQ(format_rank_ranges({1, 3, 5}, 2), "1, 3, ... (3 ranks)");
}

fs::path work_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("fleetsim-report-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string bin() { return FLEETSIM_BINARY; }
std::string scenario() { return std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml"; }

TEST(ReportPage, FoundingCaseAt32Ranks) {
  const fs::path d = work_dir("32");
  ASSERT_EQ(run_command(bin() + " run " + scenario() + " --out " + (d / "run").string()).exit_code, 0);
  const auto r = run_command(bin() + " report " + (d / "run").string() + " -o " + (d / "a.html").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("a.html"), std::string::npos);
  ASSERT_EQ(run_command(bin() + " report " + (d / "run").string() + " -o " + (d / "b.html").string()).exit_code, 0);
  const std::string page = slurp(d / "a.html");
  EXPECT_EQ(page, slurp(d / "b.html"));  // the same folder, the same bytes
  EXPECT_LT(static_cast<int64_t>(page.size()), kPageBound);
  for (const char* shown : {"<canvas class=\"heat\" id=\"heatmap\"", "id=\"heatmap-tensor\"", "\"l\":\"rank 0\",\"n\":1,\"w\":\"culprit, first to time out", "watchdog fired",
                            "<h2 id=\"steps\">", "hang at step 400", "nccl:all_reduce 'loss'",
                            "Watchdog lines and pg_status", "Flight recorder</b>", "gate only the print"})
    EXPECT_NE(page.find(shown), std::string::npos) << shown;
  for (const char* external : {"http://", "https://", " src=", "@import", "url(", "<link"})
    EXPECT_EQ(page.find(external), std::string::npos) << external;
  fs::remove_all(d);
}

TEST(ReportPage, BoundedAt16384Ranks) {
  const fs::path d = work_dir("16k");
  const auto run = run_command(bin() + " run " + scenario() + " --out " + (d / "run").string() +
                               " --set fleet.nodes=2048 --set parallel.dp=2048 --set job.telemetry_period=10s"
                               " --outputs summary,steps,telemetry,log");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto r = run_command(bin() + " report " + (d / "run").string() + " -o " + (d / "p.html").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string page = slurp(d / "p.html");
  EXPECT_LT(static_cast<int64_t>(page.size()), kPageBound) << page.size();
  EXPECT_NE(page.find("16384 of 16384 ranks have telemetry"), std::string::npos);
  EXPECT_NE(page.find("Ranks are binned"), std::string::npos);
  EXPECT_NE(page.find("\"l\":\"rank 0\""), std::string::npos);  // the culprit keeps its own row
  fs::remove_all(d);
}

TEST(ReportPage, BadInputExitsTwo) {
  const fs::path d = work_dir("bad");
  const auto missing = run_command(bin() + " report " + (d / "nothing").string());
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("nothing"), std::string::npos);
  ASSERT_EQ(run_command(bin() + " run " + scenario() + " --out " + (d / "run").string() +
                        " --outputs summary,steps,telemetry").exit_code, 0);
  const auto unwritable = run_command(bin() + " report " + (d / "run").string() + " -o " + (d / "no/such/p.html").string());
  EXPECT_EQ(unwritable.exit_code, 2) << unwritable.out;
  EXPECT_NE(unwritable.out.find("cannot write"), std::string::npos);
  fs::remove_all(d);
}

}  // namespace
}  // namespace fleetsim::report
