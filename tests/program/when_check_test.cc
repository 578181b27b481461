// compile_plan's static check of `when` arithmetic: a `when` that divides by
// zero for some rank, at a step the rank is known to reach, is a located error
// naming the rank and step (so `check` and `run` reject it before running);
// guarded divisions and `when`s reached only at some steps are left alone.
#include <gtest/gtest.h>

#include <string>

#include "fleetsim/plan.h"
#include "sim/io/scenario_loader.h"

namespace fleetsim {
namespace {

// 4 ranks (tp 2 x dp 2 over 2 nodes); `body` is the step program.
Result<Plan> compile(const std::string& body, int steps = 5) {
  const std::string yaml = "name: t\nfleet: {system: custom, gpus_per_node: 2, nodes: 2}\nparallel: {tp: 2, dp: 2}\n"
                           "job: {steps: " + std::to_string(steps) + "}\nstep:\n" + body;
  auto s = load_scenario_text(yaml, "test.yaml");
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.errors().front().to_string());
  return compile_plan(*s);
}

std::string when(const std::string& cond, const std::string& inner = "      - compute: {name: c, time: 1ms}\n") {
  return "  - when: \"" + cond + "\"\n    do:\n" + inner;
}

std::string error_of(const Result<Plan>& p) { return p.ok() ? "(compiled)" : p.errors().front().message; }

TEST(WhenCheck, RankOnlyDivisorIsFoundForEveryStep) {
  const auto p = compile(when("rank % (local_rank - 1) == 0"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(error_of(p), "division by zero in `when` at rank 1 (at every step: the expression does not read `step`)");
  EXPECT_EQ(p.errors().front().loc.file, "test.yaml");
  EXPECT_EQ(p.errors().front().loc.line, 6);
  EXPECT_EQ(p.errors().front().loc.col, 12);  // inside the quotes
}

TEST(WhenCheck, StepExpressionWithRankOnlyDivisorNamesTheStep) {
  EXPECT_EQ(error_of(compile(when("step % (rank - 1) == 0"))), "division by zero in `when` at rank 1, step 1");
  // A step guard: the division is first reached at step 3.
  EXPECT_EQ(error_of(compile(when("step > 2 && step % (dp_rank - 1) == 0"))),
            "division by zero in `when` at rank 2, step 3");
}

TEST(WhenCheck, GuardedDivisionsAreFine) {
  EXPECT_TRUE(compile(when("rank != 1 && step % (rank - 1) == 0")).ok());
  EXPECT_TRUE(compile(when("rank == 1 || 8 / (rank - 1) > 2")).ok());
  EXPECT_TRUE(compile(when("step > 5 && step % (rank - 1) == 0"), 5).ok());  // never past step 5
}

TEST(WhenCheck, FollowsOnlyTheSideEachRankTakes) {
  // Rank 1 never reaches the inner `when`: the outer one is false for it.
  const std::string inner = "      - when: \"4 % (rank - 1) == 0\"\n        do:\n"
                            "          - compute: {name: c, time: 1ms}\n";
  EXPECT_TRUE(compile(when("rank != 1", inner)).ok());
  // Rank 1 reaches it through the else side.
  const std::string both = when("rank == 1", "      - compute: {name: a, time: 1ms}\n") + "    else:\n" +
                           "      - when: \"4 % (rank - 1) == 0\"\n        do:\n"
                           "          - compute: {name: c, time: 1ms}\n";
  EXPECT_TRUE(compile(both).ok());
  const std::string other = when("rank != 1", "      - compute: {name: a, time: 1ms}\n") + "    else:\n" +
                            "      - when: \"4 % (rank - 1) == 0\"\n        do:\n"
                            "          - compute: {name: c, time: 1ms}\n";
  EXPECT_EQ(error_of(compile(other)), "division by zero in `when` at rank 1 (at every step: the expression does not read `step`)");
}

TEST(WhenCheck, InsideAStepDependentWhenIsLeftToTheRun) {
  // Whether rank 1 reaches it depends on the step: found at run time, if ever.
  const std::string inner = "      - when: \"4 % (rank - 1) == 0\"\n        do:\n"
                            "          - compute: {name: c, time: 1ms}\n";
  EXPECT_TRUE(compile(when("step == 100", inner)).ok());
}

}  // namespace
}  // namespace fleetsim
