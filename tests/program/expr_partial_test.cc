// Tests for Expr::eval_partial: a value decided with the rank variables unknown
// is the value every rank gets (a property test over random expressions, the
// ranks of a small fleet and extreme values), and the founding case's `when`
// is decided off its logging steps and left undecided on them.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include "fleetsim/expr.h"

namespace fleetsim {
namespace {

constexpr uint32_t kKnown = (1u << static_cast<unsigned>(Var::kStep)) |
                            (1u << static_cast<unsigned>(Var::kWorldSize));

// A fleet of 64 ranks: 8 GPUs a node, tp 4, dp 4, pp 4 (as Plan::vars lays them out).
VarValues fleet_vars(int64_t rank, int64_t step) {
  VarValues v{};
  v[static_cast<size_t>(Var::kRank)] = rank;
  v[static_cast<size_t>(Var::kLocalRank)] = rank % 8;
  v[static_cast<size_t>(Var::kNode)] = rank / 8;
  v[static_cast<size_t>(Var::kStep)] = step;
  v[static_cast<size_t>(Var::kWorldSize)] = 64;
  v[static_cast<size_t>(Var::kTpRank)] = rank % 4;
  v[static_cast<size_t>(Var::kDpRank)] = (rank / 4) % 4;
  v[static_cast<size_t>(Var::kPpRank)] = rank / 16;
  return v;
}

// Every rank variable set to `x` (values no fleet has: the decision holds for any).
VarValues extreme_vars(int64_t x, int64_t step) {
  VarValues v{};
  v.fill(x);
  v[static_cast<size_t>(Var::kStep)] = step;
  v[static_cast<size_t>(Var::kWorldSize)] = 64;
  return v;
}

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  std::string expr(int depth) {
    if (depth == 0 || pick(4) == 0) return leaf();
    switch (pick(4)) {
      case 0: return std::string(pick(2) ? "!" : "-") + "(" + expr(depth - 1) + ")";
      case 1: return "(" + expr(depth - 1) + (pick(2) ? " && " : " || ") + expr(depth - 1) + ")";
      default: {
        static const char* kOps[] = {"+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">="};
        return "(" + expr(depth - 1) + " " + kOps[pick(11)] + " " + expr(depth - 1) + ")";
      }
    }
  }

 private:
  std::string leaf() {
    static const char* kLiterals[] = {"0", "1", "2", "3", "400", "9223372036854775807"};
    static const char* kRankVars[] = {"rank", "local_rank", "node", "tp_rank", "dp_rank", "pp_rank"};
    switch (pick(3)) {
      case 0: return kLiterals[pick(6)];
      case 1: return pick(2) ? "step" : "world_size";
      default: return kRankVars[pick(6)];
    }
  }
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  std::mt19937_64 rng_;
};

// A decided value is what evaluating with every rank's values (and extreme ones) gives.
TEST(ExprPartialTest, DecidedValueIsEveryRanksValue) {
  Gen gen(20261130);
  int decided = 0, rank_dependent_decided = 0, tried = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string text = gen.expr(4);
    Result<Expr> e = Expr::parse(text);
    if (!e.ok()) continue;  // e.g. a division by the constant 0
    for (int64_t step : {0, 1, 7, 400, 800}) {
      ++tried;
      int64_t v = 0;
      if (!e->eval_partial(fleet_vars(0, step), kKnown, &v)) continue;
      ++decided;
      const bool reads_rank = e->uses(Var::kRank) || e->uses(Var::kLocalRank) || e->uses(Var::kNode) ||
                              e->uses(Var::kTpRank) || e->uses(Var::kDpRank) || e->uses(Var::kPpRank);
      rank_dependent_decided += reads_rank;
      for (int64_t r = 0; r < 64; ++r) {
        int64_t vr = 0;
        ASSERT_TRUE(e->eval(fleet_vars(r, step), &vr)) << text << " rank " << r << " step " << step;
        ASSERT_EQ(vr, v) << text << " rank " << r << " step " << step;
      }
      for (int64_t x : {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0}, int64_t{1},
                        std::numeric_limits<int64_t>::max()}) {
        int64_t vx = 0;
        ASSERT_TRUE(e->eval(extreme_vars(x, step), &vx)) << text << " all rank variables " << x;
        ASSERT_EQ(vx, v) << text << " all rank variables " << x;
      }
    }
  }
  // The generator is not degenerate: many are decided, among them many that read rank variables.
  EXPECT_GT(decided, tried / 5);
  EXPECT_GT(rank_dependent_decided, tried / 20);
}

// The founding case's `when`: false for every rank off the logging steps, undecided on them.
TEST(ExprPartialTest, FoundingCaseCondition) {
  Result<Expr> e = Expr::parse("rank == 0 && step % 400 == 0");
  ASSERT_TRUE(e.ok());
  int64_t v = -1;
  EXPECT_TRUE(e->eval_partial(fleet_vars(5, 7), kKnown, &v));
  EXPECT_EQ(v, 0);
  EXPECT_FALSE(e->eval_partial(fleet_vars(5, 400), kKnown, &v));
  Result<Expr> either = Expr::parse("step % 400 == 0 || tp_rank == 1");
  ASSERT_TRUE(either.ok());
  EXPECT_TRUE(either->eval_partial(fleet_vars(5, 800), kKnown, &v));
  EXPECT_EQ(v, 1);
  EXPECT_FALSE(either->eval_partial(fleet_vars(5, 801), kKnown, &v));
}

// A division that may fail for some rank is never decided, even when its value would not matter.
TEST(ExprPartialTest, MaybeFailingDivisionIsUndecided) {
  for (const char* text : {"(100 / rank) * 0", "step / rank == 0 && 0", "1 || rank % (step - step)"}) {
    Result<Expr> e = Expr::parse(text);
    ASSERT_TRUE(e.ok()) << text;
    int64_t v = 0;
    const bool decided = e->eval_partial(fleet_vars(0, 3), kKnown, &v);
    if (std::string(text) == "1 || rank % (step - step)") {
      EXPECT_TRUE(decided) << text;  // the right side never runs
      EXPECT_EQ(v, 1);
    } else {
      EXPECT_FALSE(decided) << text;
    }
  }
}

}  // namespace
}  // namespace fleetsim
