// The analysis real dumps need: groups keyed by their global name, onlyActive and
// timing-off dumps (pending window plus pg_status), the wait-for graph's root set,
// an empty dump as evidence, and all-to-all splits that are no size mismatch.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/fr_analyzer.h"
#include "tests/support/files.h"

namespace fleetsim::diagnose {
namespace {

std::string fixture(const std::string& name) {
  return test_support::fixture_path("fr/" + name);
}

// PyTorch's default dump mode on 8 ranks in 7 groups: rank 5's CPU stalled before
// its tp all_reduce. Its dump is empty; every other rank waits on it, some through
// rank 4, which is stuck in that all_reduce. pg_id is rank-local everywhere.
TEST(FrWaits, OnlyActiveTimingOffDumpsNameTheRankThatNeverIssued) {
  const Result<Record> rec = read_record(fixture("only_active_groups"));
  ASSERT_TRUE(rec.ok()) << rec.errors().front().to_string();
  EXPECT_TRUE(rec->dumps.at(5).entries.empty());
  const WaitGraph w = build_wait_graph(rec->dumps);
  ASSERT_EQ(w.roots.size(), 1u);
  EXPECT_EQ(w.roots[0].rank, 5);
  EXPECT_EQ(w.roots[0].kind, WaitKind::kNeverIssued);
  EXPECT_EQ(w.roots[0].pg_name, "3");
  EXPECT_EQ(w.roots[0].seq, 11);
  EXPECT_EQ(w.roots[0].last_enqueued, 10);
  EXPECT_EQ(w.waiting, 7);  // ranks 0, 2 and 6 wait on rank 4, which waits on rank 5

  const Diagnosis d = diagnose_record(*rec);
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.cause, Cause::kRankStalled);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{5});
  EXPECT_EQ(d.pg_name, "3");
  EXPECT_EQ(d.pg_desc, "tp");
  EXPECT_EQ(d.collective_seq_id, 11);
}

// pg_status keys are local pg_ids: rank 4's ids 0, 1, 2 are the groups "0", "3", "5".
TEST(FrWaits, PgStatusLocalIdsMapToGlobalNames) {
  const Result<Record> rec = read_record(fixture("only_active_groups"));
  ASSERT_TRUE(rec.ok());
  const FrDump& r4 = rec->dumps.at(4);
  ASSERT_TRUE(r4.status.count("5"));
  EXPECT_EQ(r4.status.at("5").last_enqueued, 6);
  EXPECT_EQ(r4.status.at("3").last_enqueued, 11);
  EXPECT_FALSE(r4.status.count("1"));  // rank 4 is not in the group named "1"
  const FrDump& r5 = rec->dumps.at(5);  // empty dump: mapped by creation order alone
  EXPECT_EQ(r5.status.at("3").last_completed, 10);
  EXPECT_EQ(r5.status.at("6").last_enqueued, 6);
}

// Expert-parallel all_to_all receives a different number of tokens on every rank.
TEST(FrWaits, AllToAllSplitsAreNoSizeMismatch) {
  const Result<Record> rec = read_record(fixture("only_active_groups"));
  ASSERT_TRUE(rec.ok());
  for (const Divergence& d : analyze_fr(rec->dumps).divergences) {
    EXPECT_NE(d.kind, DivergenceKind::kSize) << d.pg_name << " seq " << d.seq;
  }
}

FrEntry pending_entry(const std::string& pg, int64_t seq, const std::string& name) {
  FrEntry e;
  e.set_pg(Sym(pg), Sym(pg));
  e.collective_seq_id = seq;
  e.set_profiling_name(Sym(name));
  e.set_state("scheduled");
  e.set_shape(FrShape{"[[8]]", "[[8]]", "[\"Float\"]", "[\"Float\"]", 0});
  return e;
}

// Every member issued the collective and none finished it, in each stuck group: the
// rank common to all of them issued it and never finished (its GPU or NIC failed).
TEST(FrWaits, IssuedButNeverFinishedIsTheRankEveryStuckGroupHolds) {
  std::map<int, FrDump> dumps;
  const std::map<std::string, std::vector<int>> groups = {{"1", {0, 1}}, {"2", {1, 2}}, {"3", {1, 3}}};
  for (int r = 0; r < 4; ++r) {
    FrDump& d = dumps[r];
    d.rank = r;
    for (const auto& [name, members] : groups) {
      if (std::find(members.begin(), members.end(), r) == members.end()) continue;
      d.groups[name] = FrGroup{name, "tp", RankList(members)};
      d.status[name] = FrStatus{5, -1, 4};
      d.entries.push_back(pending_entry(name, 5, "nccl:all_reduce"));
    }
  }
  const WaitGraph w = build_wait_graph(dumps);
  ASSERT_EQ(w.roots.size(), 1u);
  EXPECT_EQ(w.roots[0].rank, 1);
  EXPECT_EQ(w.roots[0].kind, WaitKind::kIssuedNotFinished);
}

// The op named at a waited-for seq is the first member's (in rank order) that holds it,
// whether the seq lies near the others or a million seqs away from them.
TEST(FrWaits, TheWaitedOpIsTheFirstMembersEvenFarFromTheOtherSeqs) {
  for (const int64_t gap : {int64_t{2}, int64_t{1000000}}) {
    const int64_t waited = 10 + gap;
    std::map<int, FrDump> dumps;
    for (int r = 0; r < 2; ++r) {  // rank 2 left no dump
      FrDump& d = dumps[r];
      d.rank = r;
      d.groups["0"] = FrGroup{"0", "default_pg", {0, 1, 2}};
      d.status["0"] = FrStatus{waited, -1, waited - 1};
      FrEntry done = pending_entry("0", r == 0 ? 10 : 5, "nccl:all_reduce");  // rank 1's lies below rank 0's
      done.set_state("completed");
      d.entries.push_back(done);
      d.entries.push_back(pending_entry("0", waited, r == 0 ? "nccl:all_reduce" : "nccl:broadcast"));
    }
    const WaitGraph w = build_wait_graph(dumps);
    ASSERT_EQ(w.roots.size(), 1u) << gap;
    EXPECT_EQ(w.roots[0].rank, 2);
    EXPECT_EQ(w.roots[0].kind, WaitKind::kNoDump);
    EXPECT_EQ(w.roots[0].seq, waited);
    EXPECT_EQ(w.roots[0].op, "nccl:all_reduce") << gap;  // rank 0's, not rank 1's
  }
}

// A completed-and-retired entry of a timing-off dump stays `scheduled`: pg_status says
// it finished, so it is neither a timeout nor pending work.
TEST(FrWaits, RetiredScheduledEntriesThatPgStatusCompletedAreDone) {
  std::map<int, FrDump> dumps;
  for (int r = 0; r < 2; ++r) {
    FrDump& d = dumps[r];
    d.rank = r;
    d.groups["0"] = FrGroup{"0", "default_pg", {0, 1}};
    d.status["0"] = FrStatus{3, -1, 3};
    for (int64_t s = 1; s <= 3; ++s) {
      FrEntry e = pending_entry("0", s, "gloo:all_reduce");
      e.retired = true;
      e.set_timeout_ms(1);
      e.time_created_ns = s;
      d.entries.push_back(e);
    }
  }
  const FrFindings f = analyze_fr(dumps);
  EXPECT_TRUE(f.timed_out.empty());
  EXPECT_TRUE(f.waits.roots.empty());
  EXPECT_EQ(f.waits.stuck_groups, 0);
}

// Pipeline stages in an onlyActive dump: rank 4 is blocked in its send to stage 1
// (group rank 1 of the pp group [4, 5], so global rank 5), whose dump is empty.
TEST(FrWaits, SendWhosePeerNeverPostedTheRecv) {
  std::map<int, FrDump> dumps;
  for (int r : {4, 5}) {
    FrDump& d = dumps[r];
    d.rank = r;
    d.groups["7"] = FrGroup{"7", "pp", {4, 5}};
  }
  FrEntry send;
  send.set_pg("7", "7");
  send.is_p2p = true;
  send.p2p_seq_id = 1234;
  send.set_state("scheduled");
  send.set_profiling_name("nccl:send 0->1");
  dumps[4].entries.push_back(send);
  const WaitGraph w = build_wait_graph(dumps);
  ASSERT_EQ(w.roots.size(), 1u);
  EXPECT_EQ(w.roots[0].rank, 5);
  EXPECT_TRUE(w.roots[0].p2p);
  EXPECT_EQ(w.roots[0].seq, 1234);
  Record rec;
  rec.dumps = dumps;
  const Diagnosis d = diagnose_record(rec);
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{5});
  EXPECT_EQ(d.p2p_seq_id, 1234);
  // Once rank 5 posts its recv, nobody waits on anybody.
  FrEntry recv = send;
  recv.set_profiling_name("nccl:recv 1<-0");
  dumps[5].entries.push_back(recv);
  EXPECT_TRUE(build_wait_graph(dumps).roots.empty());
}

// A wait-for cycle: rank 3 skipped its dp all_reduce (seq 3) and went on to the world
// all_reduce, which rank 1, blocked in that dp all_reduce, never reaches. Everyone
// waited on is itself waiting; the wait that began first (rank 1's, in dp) names rank 3.
TEST(FrWaits, ACycleIsBrokenAtTheFirstWait) {
  std::map<int, FrDump> dumps;
  for (int r = 0; r < 4; ++r) {
    FrDump& d = dumps[r];
    d.rank = r;
    d.groups["0"] = FrGroup{"0", "default_pg", {0, 1, 2, 3}};
    const std::string dp = r % 2 ? "6" : "5";
    d.groups[dp] = FrGroup{dp, "dp", RankList(r % 2 ? std::vector<int>{1, 3} : std::vector<int>{0, 2})};
    if (r == 1) {
      d.status["0"] = FrStatus{2, -1, 2};
      d.status[dp] = FrStatus{3, -1, 2};
      FrEntry e = pending_entry(dp, 3, "nccl:all_reduce");
      e.time_created_ns = 90;
      d.entries.push_back(e);
    } else {
      d.status["0"] = FrStatus{3, -1, 2};
      d.status[dp] = r == 3 ? FrStatus{2, -1, 2} : FrStatus{3, -1, 3};
      FrEntry e = pending_entry("0", 3, "nccl:all_reduce");
      e.time_created_ns = r == 3 ? 80 : 110 + r;  // rank 3 got there early: it skipped an op
      d.entries.push_back(e);
    }
  }
  const WaitGraph w = build_wait_graph(dumps);
  ASSERT_EQ(w.roots.size(), 1u);
  EXPECT_EQ(w.roots[0].rank, 3);
  EXPECT_EQ(w.roots[0].kind, WaitKind::kSkipped);
  EXPECT_EQ(w.roots[0].pg_name, "6");
  Record rec;
  rec.dumps = dumps;
  const Diagnosis d = diagnose_record(rec);
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.cause, Cause::kMissingCollective);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{3});
  EXPECT_EQ(d.collective_seq_id, 3);
}

// A pipeline job at scale: 1,024 ranks, each in a world group, a tensor-parallel group
// of 8, a data-parallel group and two pipeline pairs carrying 2,000 p2p entries each;
// rank 77 stalled before its tp collective. The analysis stays linear-ish: it runs in
// the test's ordinary budget and finds the root.
TEST(FrWaits, ThousandsOfRanksAndP2pEntries) {
  constexpr int kRanks = 1024, kTp = 8, kP2p = 2000;
  std::map<int, FrDump> dumps;
  for (int r = 0; r < kRanks; ++r) {
    FrDump& d = dumps[r];
    d.rank = r;
    const int tp0 = r / kTp * kTp;
    std::vector<int> tp, dp;
    for (int i = 0; i < kTp; ++i) tp.push_back(tp0 + i);
    for (int i = r % kTp; i < kRanks; i += kTp) dp.push_back(i);
    std::vector<int> world(kRanks);
    for (int i = 0; i < kRanks; ++i) world[static_cast<size_t>(i)] = i;
    const std::string tp_name = std::to_string(1 + r / kTp), dp_name = std::to_string(1000 + r % kTp);
    d.groups["0"] = FrGroup{"0", "default_pg", RankList(world)};
    d.groups[tp_name] = FrGroup{tp_name, "tp", RankList(tp)};
    d.groups[dp_name] = FrGroup{dp_name, "dp", RankList(dp)};
    d.status["0"] = FrStatus{3, -1, 3};
    d.status[dp_name] = FrStatus{9, -1, 9};
    const std::string pp_name = std::to_string(2000 + r / 2);
    d.groups[pp_name] = FrGroup{pp_name, "pp", {r / 2 * 2, r / 2 * 2 + 1}};
    for (int k = 0; k < kP2p; ++k) {
      FrEntry e;
      e.set_pg(Sym(pp_name), Sym(pp_name));
      e.is_p2p = true;
      e.p2p_seq_id = k + 1;
      e.set_state("completed");
      e.set_profiling_name(r % 2 == 0 ? "nccl:send 0->1" : "nccl:recv 1<-0");
      d.entries.push_back(e);
    }
    if (r == 77) {
      d.status[tp_name] = FrStatus{20, -1, 20};
    } else {
      d.status[tp_name] = FrStatus{21, -1, 20};
      d.entries.push_back(pending_entry(tp_name, 21, "nccl:all_reduce"));
    }
  }
  const WaitGraph w = build_wait_graph(dumps);
  ASSERT_EQ(w.roots.size(), 1u);
  EXPECT_EQ(w.roots[0].rank, 77);
  Record rec;
  rec.dumps = std::move(dumps);
  const Diagnosis d = diagnose_record(rec);
  EXPECT_EQ(d.verdict, Verdict::kHang);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{77});
}

}  // namespace
}  // namespace fleetsim::diagnose
