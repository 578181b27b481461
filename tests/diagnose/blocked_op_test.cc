// diagnose's fix names the op that blocked: a CPU op from trace.json that outlasts the
// watchdog or never returned (with its length against the watchdog and the op the
// others wait in), a collective under a rank condition (its frames' name, site and
// `when`); generic advice only when nothing names it. Also the one-against-one split
// in a two-member group, settled by evidence other than the flight recorder's counts.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/diagnose/diagnose.h"
#include "sim/run/run.h"
#include "tests/support/scenarios.h"

namespace fleetsim::diagnose {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Simulates `yaml` (a scenario's text) into a temporary RunRecord and diagnoses it.
Diagnosis simulate_and_diagnose(const std::string& name, const std::string& yaml) {
  const fs::path dir = fs::temp_directory_path() / ("fleetsim_blocked_" + name + "_" + std::to_string(getpid()));
  const fs::path file = dir.string() + ".yaml";
  fs::remove_all(dir);
  std::ofstream(file) << yaml;
  Result<PreparedRun> prepared = prepare_run(file.string());
  EXPECT_TRUE(prepared.ok());
  if (!prepared.ok()) return {};
  RunOptions opts;
  opts.out_dir = dir.string();
  EXPECT_TRUE(execute(*prepared, opts).ok());
  Result<Diagnosis> d = diagnose_dir(dir.string());
  fs::remove_all(dir);
  fs::remove(file);
  EXPECT_TRUE(d.ok());
  return d.ok() ? *d : Diagnosis{};
}

// A 12-minute checkpoint save under `rank == 0` before a barrier, with the 10-minute
// watchdog: the others time out in the barrier while rank 0 is still saving.
TEST(BlockedOp, RankZeroSaveOutlastsTheWatchdogBeforeABarrier) {
  const Diagnosis d = simulate_and_diagnose(
      "long_save",
      test_support::long_save_yaml());
  EXPECT_EQ(d.cause, Cause::kRankStalled);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{0});
  ASSERT_TRUE(d.blocked_op.has_value()) << format_human(d);
  const BlockedOp& b = *d.blocked_op;
  EXPECT_EQ(b.kind, BlockedOp::Kind::kOutlastsWatchdog);
  EXPECT_EQ(b.rank, 0);
  EXPECT_EQ(b.name, "save_checkpoint");
  EXPECT_EQ(b.step, 2);
  EXPECT_DOUBLE_EQ(b.length_s, 720);
  EXPECT_DOUBLE_EQ(b.watchdog_s, 600);
  EXPECT_EQ(b.waiting_in, "after_save");
  EXPECT_EQ(b.note, "only rank 0 runs it");
  EXPECT_TRUE(has(d.advice, "rank 0's CPU is in `save_checkpoint` (only rank 0 runs it) at step 2, which takes 12 min, "
                            "longer than the 10-minute watchdog: the ranks waiting for it in `after_save` time out first"))
      << d.advice;
  EXPECT_FALSE(has(d.advice, "data loading, I/O, a lock")) << d.advice;
  const nlohmann::json j = nlohmann::json::parse(format_json(d));
  EXPECT_EQ(j["blocked_op"]["kind"], "outlasts_watchdog");
  EXPECT_EQ(j["blocked_op"]["name"], "save_checkpoint");
  EXPECT_EQ(j["blocked_op"]["watchdog_s"], 600.0);
  EXPECT_TRUE(has(j["advice"].get<std::string>(), "`save_checkpoint`"));
}

// A CPU op that never returns: named with how long it had run when the record ends,
// against the watchdog, and the collective its peers wait in.
TEST(BlockedOp, StalledCpuOpIsNamedWithItsLength) {
  const Diagnosis d = simulate_and_diagnose(
      "stall",
      "name: stall\nfleet: {system: dgx-h100, nodes: 1}\nparallel: {tp: 2, dp: 4}\n"
      "job: {steps: 6, seed: 3, watchdog: 1min, telemetry_period: 1s}\nstep:\n"
      "  - cpu: {name: fetch_batch, time: 10ms}\n"
      "  - compute: {name: fwd_bwd, time: 100ms}\n"
      "  - allreduce: {name: grads, group: dp, bytes: 64MiB}\n"
      "faults:\n  - stall: {rank: 3, at_step: 4, op: fetch_batch, where: fetch_batch}\n");
  EXPECT_EQ(d.cause, Cause::kRankStalled);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{3});
  ASSERT_TRUE(d.blocked_op.has_value()) << format_human(d);
  EXPECT_EQ(d.blocked_op->kind, BlockedOp::Kind::kNeverReturned);
  EXPECT_EQ(d.blocked_op->name, "fetch_batch");
  EXPECT_EQ(d.blocked_op->step, 4);
  EXPECT_GE(d.blocked_op->length_s, 60);
  EXPECT_TRUE(has(d.advice, "rank 3's CPU entered `fetch_batch` at step 4 and never returned")) << d.advice;
  EXPECT_TRUE(has(d.advice, "against the 1-minute watchdog. Its peers wait for it inside NCCL (in `grads`)")) << d.advice;
}

// Nothing names what the stalled rank is doing (no trace): the generic advice, naming
// only the collective its peers wait in.
TEST(BlockedOp, GenericAdviceWhenNothingNamesTheOp) {
  Result<Diagnosis> d = diagnose_dir(std::string(FLEETSIM_SOURCE_DIR) + "/tests/fixtures/fr/stalled");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cause, Cause::kRankStalled);
  EXPECT_FALSE(d->blocked_op.has_value());
  EXPECT_TRUE(has(d->advice, "its CPU is stuck (data loading, I/O, a lock, a recompile) and it never issued")) << d->advice;
  EXPECT_TRUE(nlohmann::json::parse(format_json(*d))["blocked_op"].is_null());
}

// Two ranks in one group: rank 1 holds a broadcast (seq 2) rank 0 never issued.
Record pair_record(const std::string& when) {
  Record rec;
  rec.dir = "pair";
  for (int r : {0, 1}) {
    FrDump& dump = rec.dumps[r];
    dump.rank = r;
    dump.groups["1"] = FrGroup{"1", "tp", {0, 1}};
    dump.status["1"] = FrStatus{r == 1 ? 2 : 1, -1, 1};
    FrEntry done;
    done.set_group(FrGroupFacts{Sym(), "1", "tp", 60'000});
    done.collective_seq_id = 1;
    done.set_profiling_name("nccl:broadcast");
    done.set_shape(FrShape{"[[4]]", "[[4]]", Sym(), Sym(), 0});
    done.set_state("completed");
    done.time_created_ns = 1'000'000'000;
    dump.entries.push_back(done);
    if (r == 1) {
      FrEntry pending = done;
      pending.collective_seq_id = 2;
      pending.set_state("scheduled");
      pending.time_created_ns = 2'000'000'000;
      pending.set_call(FrCall{"batch_broadcast", Sym(), Sym(when), -1});
      dump.entries.push_back(pending);
    }
  }
  return rec;
}

// The holder's op carries a condition with a rank in it (as Megatron's `pp_rank == 3`
// does, which both members of a tp group satisfy): trace.json showing rank 0's CPU
// stuck outweighs the `when` rule, which alone would blame rank 1.
TEST(PairSplit, StuckCpuOutweighsTheWhenRule) {
  Record rec = pair_record("pp_rank == 0 || pp_rank == 3");
  const Diagnosis by_when = diagnose_record(rec);
  EXPECT_EQ(by_when.cause, Cause::kExtraCollective);
  EXPECT_EQ(by_when.culprit_ranks, std::vector<int>{1});
  rec.cpu_stuck[0] = CpuStuck{"data_loader", 1.5};
  const Diagnosis d = diagnose_record(rec);
  EXPECT_EQ(d.cause, Cause::kRankStalled) << format_human(d);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{0});
  EXPECT_TRUE(has(format_human(d), "one against one, settled by trace.json: rank 0's CPU entered data_loader"))
      << format_human(d);
  ASSERT_TRUE(d.blocked_op.has_value());
  EXPECT_EQ(d.blocked_op->name, "data_loader");
  EXPECT_EQ(d.blocked_op->waiting_in, "batch_broadcast");
}

// No condition and no telemetry or trace: the wait-for graph settles it (rank 0 has
// nothing pending while rank 1 waits on it), no longer a low-confidence tie.
TEST(PairSplit, WaitForGraphSettlesATie) {
  const Diagnosis d = diagnose_record(pair_record(""));
  EXPECT_EQ(d.cause, Cause::kRankStalled) << format_human(d);
  EXPECT_EQ(d.culprit_ranks, std::vector<int>{0});
  const std::string text = format_human(d);
  EXPECT_TRUE(has(text, "settled by the wait-for graph: rank 0 has nothing pending anywhere while rank 1 waits on it"))
      << text;
  EXPECT_FALSE(has(text, "low confidence")) << text;
}

}  // namespace
}  // namespace fleetsim::diagnose
