// Tests for fleetsim diagnose: the culprit rule on hand-built PyTorch-schema FR
// fixtures (tests/fixtures/fr/, written by make_fixtures.py), the record reader's
// liberal parsing, and the CLI's output and exit codes.
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/support/command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/fr_analyzer.h"
#include "sim/diagnose/signals.h"
#include "tests/support/files.h"

namespace fleetsim::diagnose {
namespace {

std::string fixture(const std::string& name) {
  return test_support::fixture_path("fr/" + name);
}

Diagnosis diagnose_fixture(const std::string& name) {
  Result<Diagnosis> d = diagnose_dir(fixture(name));
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().to_string());
  return d.ok() ? *d : Diagnosis{};
}

struct CliResult {
  int exit_code = -1;
  std::string out;
};

CliResult run_cli(const std::string& args) {
  const fleetsim::test_support::CommandResult c = fleetsim::test_support::run_command(std::string(FLEETSIM_BINARY) + " " + args);
  return {c.exit_code, c.out};
}

// (a) Rank 0's extra all_reduce is blamed on rank 0 alone, although its dump is read first.
TEST(Diagnose, ExtraCollectiveOnRankZeroReadFirst) {
  const Diagnosis d = diagnose_fixture("extra_rank0");
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.cause, Cause::kExtraCollective);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{0});
  EXPECT_EQ(d.pg_name, "0");
  EXPECT_EQ(d.pg_desc, "default_pg");
  EXPECT_EQ(d.collective_seq_id, 3);
  EXPECT_EQ(d.op, "nccl:all_reduce");
  EXPECT_EQ(d.op_name, "print_loss");
  EXPECT_NE(d.advice.find("gate only the print (the rank-local part)"), std::string::npos);
  // The fix names the op, its condition and its step from the culprit's frames.
  EXPECT_NE(d.advice.find("rank 0 is in `print_loss` ("), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("under `rank == 0 && step % 3 == 0`"), std::string::npos) << d.advice;
  ASSERT_TRUE(d.blocked_op.has_value());
  EXPECT_EQ(d.blocked_op->kind, BlockedOp::Kind::kRankOnlySync);
  EXPECT_EQ(d.blocked_op->name, "print_loss");
}

// One rank holding seq 1 while seven hold nothing (entries omitted) is an extra op on it.
TEST(Diagnose, ExtraCollectiveAtTheTailWithEmptyPeers) {
  const Diagnosis d = diagnose_fixture("extra_tail");
  EXPECT_EQ(d.cause, Cause::kExtraCollective);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{0});
  EXPECT_EQ(d.collective_seq_id, 1);
}

// (b) In a tp group of 8, the one rank with a different size is named, with both sizes.
TEST(Diagnose, SizeMismatchInTensorParallelGroup) {
  const Diagnosis d = diagnose_fixture("tp_mismatch");
  EXPECT_EQ(d.cause, Cause::kMismatchedCollective);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{5});
  EXPECT_EQ(d.pg_desc, "tp");
  EXPECT_EQ(d.collective_seq_id, 2);
  EXPECT_NE(d.advice.find("[[4096,1024]]"), std::string::npos);
  EXPECT_NE(d.advice.find("[[4096,2048]]"), std::string::npos);
}

// (c) A rank whose dp ops run one seq early skipped the op the others hold at that seq.
TEST(Diagnose, SkippedDataParallelAllReduce) {
  const Diagnosis d = diagnose_fixture("skip_dp");
  EXPECT_EQ(d.cause, Cause::kMissingCollective);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{2});
  EXPECT_EQ(d.pg_desc, "dp");
  EXPECT_EQ(d.collective_seq_id, 4);
  EXPECT_EQ(d.op_name, "grad_bucket_1");
}

// A rank lacking a dp op but enqueuing later work elsewhere is alive: it skipped the op.
TEST(Diagnose, SkippedOpAtTheTailByALiveRank) {
  const Diagnosis d = diagnose_fixture("skip_tail");
  EXPECT_EQ(d.cause, Cause::kMissingCollective);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{2});
  EXPECT_EQ(d.pg_desc, "dp");
}

// Send/recv are aligned per directed pair: rank 3 never posted the recv for rank 1's
// third send. Rank 1, blocked in that send, is absent from the world all-reduce, but
// it is the victim; the p2p names (group ranks, as PyTorch writes them) map to 1 and 3.
TEST(Diagnose, P2pRecvNeverPostedFollowsTheChainToItsRank) {
  const Diagnosis d = diagnose_fixture("p2p_skip");
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.cause, Cause::kMissingCollective);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{3});
  EXPECT_EQ(d.pg_desc, "pp");
  EXPECT_EQ(d.p2p_seq_id, 3);
  EXPECT_EQ(d.collective_seq_id, -1);
  EXPECT_EQ(d.op, "nccl:recv 1<-0");
}

// (d) Entries that stop early on a rank whose GPU reads 0% mean a stalled rank.
TEST(Diagnose, StalledRankWithIdleGpu) {
  const Diagnosis d = diagnose_fixture("stalled");
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.cause, Cause::kRankStalled);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{2});
  EXPECT_EQ(d.collective_seq_id, 5);
  EXPECT_NE(d.advice.find("py-spy"), std::string::npos);
}

// (e) All ranks completing the same collectives, with flat step times, is healthy.
TEST(Diagnose, HealthyRun) {
  const Diagnosis d = diagnose_fixture("healthy");
  EXPECT_EQ(d.verdict, Verdict::kHealthy);
  EXPECT_EQ(d.cause, Cause::kNone);
  EXPECT_TRUE(d.culprit_ranks.empty());
}

// A rank that starts every collective last while the others wait is a straggler.
TEST(Diagnose, StragglerArrivesLast) {
  const Diagnosis d = diagnose_fixture("straggler");
  EXPECT_EQ(d.verdict, Verdict::kSlow);
  EXPECT_EQ(d.cause, Cause::kStraggler);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{3});
}

// (f) Real dump names, no rank key, string pg_status and null times still diagnose.
TEST(Diagnose, PytorchFileNamesAndStringStatus) {
  Result<Record> rec = read_record(fixture("pytorch_names"));
  ASSERT_TRUE(rec.ok());
  ASSERT_EQ(rec->dumps.size(), 4u);
  EXPECT_EQ(rec->dumps.at(2).status.at("0").last_enqueued, 5);
  EXPECT_EQ(rec->dumps.at(3).groups.at("0").ranks, (std::vector<int>{0, 1, 2, 3}));
  const Diagnosis d = diagnose_record(*rec);
  EXPECT_EQ(d.cause, Cause::kMismatchedCollective);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{3});
  EXPECT_EQ(d.collective_seq_id, 5);
}

// A RunRecord of the step-400 bug names rank 0's conditional op and the gate-the-print fix.
TEST(Diagnose, Step400RunRecord) {
  const Diagnosis d = diagnose_fixture("step400_record");
  EXPECT_EQ(d.cause, Cause::kExtraCollective);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{0});
  EXPECT_EQ(d.collective_seq_id, 400);
  EXPECT_EQ(d.op_name, "log_loss");
  EXPECT_NE(d.advice.find("rank == 0 && step % 400 == 0"), std::string::npos);
  bool saw_watchdog = false;
  for (const Evidence& e : d.evidence) saw_watchdog |= e.step == 3 && e.text.find("victim") != std::string::npos;
  EXPECT_TRUE(saw_watchdog);
}

// The rank of a dump comes from the trailing number of PyTorch's file names.
TEST(DiagnoseReader, RankFromFileName) {
  EXPECT_EQ(rank_from_file_name("nccl_trace_rank_3"), 3);
  EXPECT_EQ(rank_from_file_name("comm_lib_trace_rank_12.json"), 12);
  EXPECT_EQ(rank_from_file_name("rank_0.json"), 0);
  EXPECT_EQ(rank_from_file_name("summary.json"), std::nullopt);
  EXPECT_EQ(rank_from_file_name("rank_x.json"), std::nullopt);
}

// A byte offset maps to a 1-based line and column.
TEST(DiagnoseReader, OffsetToLineCol) {
  const SourceLoc loc = loc_from_offset("{\n  \"a\": x}", 10, "f.json");
  EXPECT_EQ(loc.line, 2);
  EXPECT_EQ(loc.col, 8);
}

// A JSON number beyond a double is bad input at its place, not an uncaught exception.
TEST(DiagnoseReader, NumberBeyondADoubleIsALocatedError) {
  const Result<nlohmann::json> j = parse_json_text("{\n  \"rank\": 1e999}", "f.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.errors().front().loc.line, 2);
  EXPECT_EQ(j.errors().front().loc.col, 11);
  EXPECT_NE(j.errors().front().message.find("number out of range: 1e999"), std::string::npos);
}

// An FR integer given as a float beyond int64 has no integer value: a located error
// (never an out-of-range cast).
TEST(DiagnoseReader, HugeFloatFieldIsALocatedError) {
  const Result<FrDump> d = parse_fr_dump(R"({"rank": 1e300, "entries": []})", "rank_5.json", 5);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.errors().front().loc.file, "rank_5.json");
  EXPECT_EQ(d.errors().front().loc.line, 1);
  EXPECT_NE(d.errors().front().message.find("rank"), std::string::npos) << d.errors().front().to_string();
}

// A CSV integer cell beyond its type reads as a missing cell (0); the others as written.
TEST(DiagnoseReader, CsvIntegerBeyondItsTypeReadsAsZero) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fleetsim_csv_range_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "steps.csv") << "step,start_s,end_s,duration_s,slowest_rank\n1e30,0,1,1,1e10\n2,1,2,1,3\n";
  const Result<Record> rec = read_record(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(rec.ok());
  ASSERT_EQ(rec->steps.size(), 2u);
  EXPECT_EQ(rec->steps[0].step, 0);
  EXPECT_EQ(rec->steps[0].slowest_rank, 0);
  EXPECT_EQ(rec->steps[1].step, 2);
  EXPECT_EQ(rec->steps[1].slowest_rank, 3);
}

// PyTorch's watchdog line yields rank, SeqNum, OpType and NumelIn.
TEST(DiagnoseSignals, WatchdogLine) {
  const auto w = parse_watchdog_line(
      "[rank118]:[E603 17:48:01.005271823 ProcessGroupNCCL.cpp:632] [Rank 118] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=2398459, OpType=ALLREDUCE, NumelIn=8652160, "
      "NumelOut=8652160, Timeout(ms)=1800000) ran for 1800068 milliseconds before timing out.");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->rank, 118);
  EXPECT_EQ(w->seq, 2398459);
  EXPECT_EQ(w->op_type, "ALLREDUCE");
  EXPECT_EQ(w->numel_in, 8652160);
  EXPECT_EQ(w->timeout_ms, 1800000);
}

// Digits past an int's range in a log line are not a rank or a sequence number:
// the line reads as having none (never an uncaught std::out_of_range).
TEST(DiagnoseSignals, OverlongNumbersInALogLineAreNotRanks) {
  EXPECT_EQ(rank_of_line("[rank99999999999999999999]: hello"), -1);
  EXPECT_FALSE(parse_watchdog_line(
                   "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=99999999999999999999, "
                   "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds")
                   .has_value());
  const std::vector<std::string> lines = {"[rank123456789012345678]: crash: exitcode 1", "[rank7]: crash: exitcode 1"};
  EXPECT_EQ(find_crashed_ranks(lines), std::vector<int>{7});
}

// A tensor shape with a float or a huge dimension reads, with no out-of-range
// cast or signed overflow: unreadable shapes count no elements, huge ones saturate.
TEST(DiagnoseReader, TensorShapesBeyondInt64ReadWithoutOverflow) {
  const Result<FrDump> d = parse_fr_dump(
      R"({"rank": 0, "entries": [
        {"record_id": 0, "collective_seq_id": 1, "profiling_name": "nccl:all_reduce", "state": "scheduled",
         "input_sizes": [[1e300, 2]]},
        {"record_id": 1, "collective_seq_id": 2, "profiling_name": "nccl:all_reduce", "state": "scheduled",
         "input_sizes": [[4294967296, 4294967296, 4294967296]]},
        {"record_id": 2, "collective_seq_id": 3, "profiling_name": "nccl:all_reduce", "state": "scheduled",
         "input_sizes": [[3, "4"], [2]]}]})",
      "rank_0.json", 0);
  ASSERT_TRUE(d.ok()) << d.errors().front().to_string();
  ASSERT_EQ(d->entries.size(), 3u);
  EXPECT_EQ(d->entries[0].input_numel(), 0);
  EXPECT_EQ(d->entries[1].input_numel(), INT64_MAX);
  EXPECT_EQ(d->entries[2].input_numel(), 14);
}

// A log line quoted as evidence may hold bytes that are not UTF-8 (a pasted log):
// --json replaces them, it never throws (found by the record fuzzer).
TEST(DiagnoseReport, JsonWithNonUtf8EvidenceIsWritten) {
  Diagnosis d;
  d.evidence.push_back({3, std::string("job.log line 1: [rank1]: \xff\xfe bad bytes")});
  const std::string j = format_json(d);
  EXPECT_NE(j.find("bad bytes"), std::string::npos);
  EXPECT_NE(j.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD in place of the bad bytes
}

// Telemetry where one rank idles and the rest spin names the idle rank.
TEST(DiagnoseSignals, UtilizationSomeIdle) {
  std::vector<TelemetryRow> rows;
  for (int t = 1; t <= 10; ++t) {
    for (int r = 0; r < 3; ++r) {
      TelemetryRow row;
      row.time_s = t;
      row.rank = r;
      row.step = t <= 3 ? t : 4;
      row.gpu_util = t <= 3 ? 95 : (r == 1 ? 0 : 100);
      row.tensor_active = t <= 3 ? 0.6 : 0;
      rows.push_back(row);
    }
  }
  const UtilPattern p = read_utilization(rows);
  EXPECT_TRUE(p.progress_stopped);
  EXPECT_EQ(p.kind, UtilKind::kSomeIdle);
  EXPECT_EQ(p.idle_ranks, std::vector<int>{1});
}

// (g) Malformed JSON exits 2 with one FILE:LINE:COL error line.
TEST(DiagnoseCli, MalformedJsonExitsTwoWithPosition) {
  const CliResult r = run_cli("diagnose " + fixture("malformed"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("malformed/rank_1.json:4:24: error: malformed JSON"), std::string::npos) << r.out;
}

// A missing folder is bad input: exit 2 and a one-line error naming it.
TEST(DiagnoseCli, MissingFolderExitsTwo) {
  const CliResult r = run_cli("diagnose " + fixture("no_such_case"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("no_such_case: error:"), std::string::npos) << r.out;
}

// --json prints one object carrying the verdict, culprit, where and evidence.
TEST(DiagnoseCli, JsonOutput) {
  const CliResult r = run_cli("diagnose --json " + fixture("extra_rank0"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "hang");
  EXPECT_EQ(j["cause"], "extra_collective");
  EXPECT_EQ(j["culprit_ranks"], nlohmann::json::array({0}));
  EXPECT_EQ(j["process_group"]["name"], "0");
  EXPECT_EQ(j["collective_seq_id"], 3);
  EXPECT_EQ(j["op"]["profiling_name"], "nccl:all_reduce");
  EXPECT_FALSE(j["evidence"].empty());
  EXPECT_TRUE(j["advice"].is_string());
}

// The human transcript numbers the steps and ends with the verdict lines.
TEST(DiagnoseCli, HumanOutput) {
  const CliResult r = run_cli("diagnose " + fixture("tp_mismatch"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("5. Flight recorder"), std::string::npos);
  EXPECT_NE(r.out.find("Cause:   mismatched_collective"), std::string::npos);
  EXPECT_NE(r.out.find("Culprit: rank(s) [5]"), std::string::npos);
  EXPECT_NE(r.out.find("Where:   pg 1 (tp), seq 2"), std::string::npos);
}

}  // namespace
}  // namespace fleetsim::diagnose
