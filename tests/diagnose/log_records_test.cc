// diagnose on logs alone: watchdog records as PyTorch releases word them, lines a
// terminal wrapped, progress bars sharing a line, and the desync the records name.
// The fixtures under tests/fixtures/logs/ are excerpts of logs users pasted into
// public issues (sources in its README).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/signals.h"
#include "tests/support/files.h"

namespace fleetsim::diagnose {
namespace {

std::string log_fixture(const std::string& name) {
  return test_support::fixture_path("logs/" + name);
}

Diagnosis diagnose_log(const std::string& name) {
  Result<Diagnosis> d = diagnose_dir(log_fixture(name));
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().to_string());
  return d.ok() ? *d : Diagnosis{};
}

// Hard-wraps every line at `width` columns, as a terminal does.
std::vector<std::string> wrap(const std::vector<std::string>& lines, size_t width) {
  std::vector<std::string> out;
  for (std::string l : lines) {
    for (; l.size() > width; l = l.substr(width)) out.push_back(l.substr(0, width));
    out.push_back(l);
  }
  return out;
}

const std::vector<std::string> kDesync = {
    "[rank0]:[E1112 08:01:02.123456789 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=21, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 "
    "milliseconds before timing out.",
    "[rank0]:[E1112 08:01:02.123456790 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 0] Exception "
    "(either an error or timeout) detected by watchdog at work: 21, last enqueued NCCL work: 21, last completed NCCL "
    "work: 20.",
    "[rank1]:[E1112 08:01:02.223456789 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=21, OpType=ALLREDUCE, NumelIn=25, NumelOut=25, Timeout(ms)=600000) ran for 600030 "
    "milliseconds before timing out.",
    "[rank2]:[E1112 08:01:02.323456789 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=21, OpType=ALLREDUCE, NumelIn=25, NumelOut=25, Timeout(ms)=600000) ran for 600030 "
    "milliseconds before timing out.",
};

// A record wrapped at 80 columns reads as the unwrapped one, pg_status included.
TEST(LogRecords, WrappedRecordsAreJoinedAgain) {
  const std::vector<WatchdogLine> plain = find_watchdog_lines(kDesync);
  const std::vector<WatchdogLine> wrapped = find_watchdog_lines(wrap(kDesync, 80));
  ASSERT_EQ(plain.size(), 3u);
  ASSERT_EQ(wrapped.size(), 3u);
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(wrapped[i].rank, plain[i].rank);
    EXPECT_EQ(wrapped[i].seq, plain[i].seq);
    EXPECT_EQ(wrapped[i].op_type, plain[i].op_type);
    EXPECT_EQ(wrapped[i].numel_in, plain[i].numel_in);
  }
  EXPECT_EQ(wrapped[0].pg, "0");
  EXPECT_EQ(wrapped[0].pg_desc, "default_pg");
  EXPECT_EQ(wrapped[0].last_enqueued, 21);
  EXPECT_EQ(wrapped[0].last_completed, 20);
  EXPECT_EQ(wrapped[1].line_no, 8u);  // the physical line the second record starts on (3 + 4 lines before)
}

// The "[rankN]:" prefix is the global rank; newer releases print the group rank in
// "[Rank N]". The group is the GUID of the pg tag on the status line.
TEST(LogRecords, GlobalRankAndGroupGuid) {
  const std::vector<WatchdogLine> w = find_watchdog_lines({
      " 2025-02-18 12:54 [rank13]:[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=216, OpType=ALLTOALL_BASE, NumelIn=1379328, NumelOut=1572864, "
      "Timeout(ms)=600000) ran for 600045 milliseconds before timing out.",
      " 2025-02-18 12:54 [rank13]:[E218 04:54:22.864535778 ProcessGroupNCCL.cpp:1795] [PG ID 11 PG GUID 119 Rank 1] "
      "Exception (either an error or timeout) detected by watchdog at work: 216, last enqueued NCCL work: 220, last "
      "completed NCCL work: 215.",
  });
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rank, 13);
  EXPECT_EQ(w[0].pg, "119");
  EXPECT_EQ(w[0].numel_out, 1572864);
  EXPECT_EQ(w[0].last_enqueued, 220);
}

// Old releases: fields in another order, no NumelIn, the blocking-wait wording,
// "[PG 0 (default_pg) Rank 12]" and "Timeout at NCCL work".
TEST(LogRecords, OlderWordings) {
  const std::vector<WatchdogLine> w = find_watchdog_lines({
      "[E ProcessGroupNCCL.cpp:523] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE, "
      "SeqNum=458) ran for 1800600 ms before timing out.",
      "[rank12]:[E909 09:55:29.313379098 ProcessGroupNCCL.cpp:541] [Rank 12] Work WorkNCCL(SeqNum=2070, OpType=REDUCE, "
      "NumelIn=1, NumelOut=1, Timeout(ms)=600000) timed out in blocking wait.",
      "[rank12]:[E909 09:55:29.313379098 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 12] Timeout at NCCL work: "
      "2070, last enqueued NCCL work: 2070, last completed NCCL work: 2069.",
  });
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].rank, 3);
  EXPECT_EQ(w[0].seq, 458);
  EXPECT_EQ(w[0].numel_in, -1);
  EXPECT_EQ(w[1].rank, 12);
  EXPECT_EQ(w[1].op_type, "REDUCE");
  EXPECT_EQ(w[1].pg_desc, "default_pg");
  EXPECT_EQ(w[1].last_completed, 2069);
}

// Ranks interleaved on one line, and a progress bar redrawn with '\r' before a record.
TEST(LogRecords, SharedLinesAndCarriageReturns) {
  const std::vector<WatchdogLine> w = find_watchdog_lines({
      "Epoch 0:  95%|#####8    | 8692/9188 [30:57<01:45,  4.68it/s]\r[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] "
      "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4013, OpType=BROADCAST, NumelIn=1, NumelOut=1, "
      "Timeout(ms)=600000) ran for 600009 milliseconds before timing out.[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] "
      "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4013, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
      "Timeout(ms)=600000) ran for 600011 milliseconds before timing out.",
  });
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].rank, 1);
  EXPECT_EQ(w[0].op_type, "BROADCAST");
  EXPECT_EQ(w[1].rank, 0);
  EXPECT_EQ(w[1].op_type, "ALLREDUCE");
}

// One rank at a different OpType and size at the same SeqNum: a mismatch at that seq,
// blamed on the one that differs from the rest.
TEST(LogDesyncRule, SameSeqDifferentOpIsMismatched) {
  const std::optional<LogDesync> d = find_log_desync(find_watchdog_lines(wrap(kDesync, 80)));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->cause, Cause::kMismatchedCollective);
  EXPECT_EQ(d->seq, 21);
  EXPECT_EQ(d->culprits, std::vector<int>{0});
  EXPECT_FALSE(d->tie);
}

// One rank two collectives ahead of the rest: it issued collectives they did not,
// and the group first disagrees at the others' SeqNum.
TEST(LogDesyncRule, OneRankAheadIsExtra) {
  std::vector<std::string> lines;
  for (int r = 0; r < 4; ++r) {
    const int seq = r == 2 ? 315 : 313;
    lines.push_back("[rank" + std::to_string(r) + "]:[E1112 08:01:02.1 ProcessGroupNCCL.cpp:616] [Rank " +
                    std::to_string(r) + "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" +
                    std::to_string(seq) + ", OpType=" + (r == 2 ? "ALLREDUCE" : "_ALLGATHER_BASE") +
                    ", NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600000 milliseconds before timing out.");
  }
  const std::optional<LogDesync> d = find_log_desync(find_watchdog_lines(lines));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->cause, Cause::kExtraCollective);
  EXPECT_EQ(d->seq, 313);
  EXPECT_EQ(d->culprits, std::vector<int>{2});
}

// Ranks that agree name no desync.
TEST(LogDesyncRule, AgreementIsNoDesync) {
  std::vector<std::string> lines(kDesync.begin(), kDesync.begin() + 2);
  lines.push_back(kDesync[0]);
  EXPECT_FALSE(find_log_desync(find_watchdog_lines(lines)).has_value());
}

// The real logs: cause and sequence number from the log alone.
TEST(RealLogs, TorchtuneWrappedAt80Columns) {
  const Diagnosis d = diagnose_log("torchtune_2093_wrapped");
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.cause, Cause::kMissingCollective);
  EXPECT_EQ(d.collective_seq_id, 619725);
  EXPECT_EQ(d.pg_desc, "default_pg");
}

TEST(RealLogs, TorchrecProgressBarOnTheFirstRecordsLine) {
  const Diagnosis d = diagnose_log("torchrec_189_progress");
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.cause, Cause::kMissingCollective);
  EXPECT_EQ(d.collective_seq_id, 4188);
}

// Ranks 1 and 2 wait in a 1-element all-reduce that rank 0, still preparing data
// (its progress bar), never issued: no watchdog record of its own.
TEST(RealLogs, Myria3dRankThatNeverIssued) {
  const Diagnosis d = diagnose_log("myria3d_123_progress");
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.cause, Cause::kRankStalled);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{0});
  EXPECT_EQ(d.collective_seq_id, 3);
  // The evidence names the file the record is in, and its line there.
  bool named = false;
  for (const Evidence& e : d.evidence) named = named || e.text.rfind("train.log line 4:", 0) == 0;
  EXPECT_TRUE(named);
}

// TORCH_DISTRIBUTED_DEBUG=DETAIL names both sides of the desync: a broadcast against
// an all-reduce at one sequence number.
TEST(RealLogs, SpeechbrainDetailMismatch) {
  const Diagnosis d = diagnose_log("speechbrain_2401_detail");
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.cause, Cause::kMismatchedCollective);
  EXPECT_EQ(d.collective_seq_id, 485);
  EXPECT_EQ(d.op, "nccl:broadcast");
}

}  // namespace
}  // namespace fleetsim::diagnose
