// How diagnose lines up each member's entries by collective_seq_id: one entry per seq
// and member, the last a dump holds for a seq winning, whatever order the dump lists
// them in, and members merged seq by seq for the timing evidence.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/diagnose/fr_analyzer.h"

namespace fleetsim::diagnose {
namespace {

FrEntry completed(int64_t seq, int64_t started_ns) {
  FrEntry e;
  e.set_pg(Sym("0"), Sym("default_pg"));
  e.collective_seq_id = seq;
  e.set_profiling_name("nccl:all_reduce");
  e.set_state("completed");
  e.time_discovered_started_ns = started_ns;
  e.set_shape(FrShape{"[[8]]", "[[8]]", "[\"Float\"]", "[\"Float\"]", 0});
  return e;
}

TEST(FrAlign, KeepLastBySeqSortsAndKeepsTheLaterOfEachSeq) {
  std::vector<FrEntry> held = {completed(3, 30), completed(1, 10), completed(3, 31), completed(2, 20),
                               completed(1, 11), completed(1, 12)};
  EntryRun at;
  for (const FrEntry& e : held) at.push_back(held.data(), &e);
  at.keep_last_by_seq();
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(at[0], &held[5]);  // seq 1: the last of three
  EXPECT_EQ(at[1], &held[3]);
  EXPECT_EQ(at[2], &held[2]);  // seq 3: the later of two
  EXPECT_EQ(at.capacity(), at.size());
  EXPECT_EQ(at.find(3), &held[2]);
  EXPECT_EQ(at.find(1), &held[5]);
  EXPECT_EQ(at.find(0), nullptr);
  EXPECT_EQ(at.find(4), nullptr);
  std::vector<const FrEntry*> walked(at.begin(), at.end());
  EXPECT_EQ(walked, (std::vector<const FrEntry*>{&held[5], &held[3], &held[2]}));
}

// Rank 2 starts seqs 1 to 4 two milliseconds after the others. Its dump lists them
// newest first and holds seq 1 twice: the earlier entry (on time) is replaced by the
// later (late), so rank 2 is late at all four seqs. Rank 0 holds no seq 1.
TEST(FrAlign, LateArriverReadsTheLastEntryOfEachSeqInAnyOrder) {
  const int64_t ms = 1'000'000;
  std::map<int, FrDump> dumps;
  for (int r = 0; r < 3; ++r) {
    FrDump& d = dumps[r];
    d.rank = r;
    for (int64_t seq = 4; seq >= 1; --seq) {
      if (r == 0 && seq == 1) continue;
      if (r == 2 && seq == 1) d.entries.push_back(completed(seq, seq * 100 * ms));
      d.entries.push_back(completed(seq, seq * 100 * ms + (r == 2 ? 2 * ms : r * 1000)));
    }
  }
  const std::optional<LateArriver> late = find_timing(dumps, false).late;
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->rank, 2);
  EXPECT_EQ(late->late_count, 4);
  EXPECT_EQ(late->seq_count, 4);
  EXPECT_NEAR(late->mean_lag_ms, 2.0 - 0.001, 1e-9);  // behind rank 1 at every seq
}

}  // namespace
}  // namespace fleetsim::diagnose
