// Tests for fleetsim/expr.h: precedence and evaluation, short-circuit
// logic, division by zero, located parse errors with did-you-mean, and
// evaluation that does not allocate.
#include "fleetsim/expr.h"

#include <gtest/gtest.h>

#include "tests/support/alloc_counter.h"

namespace fleetsim {
namespace {

VarValues vars(int64_t rank, int64_t step) {
  VarValues v{};
  v[static_cast<size_t>(Var::kRank)] = rank;
  v[static_cast<size_t>(Var::kStep)] = step;
  v[static_cast<size_t>(Var::kWorldSize)] = 32;
  return v;
}

// Evaluates `text` at (rank, step); fails the test on a parse error or no value.
int64_t eval(const char* text, int64_t rank = 0, int64_t step = 0) {
  Result<Expr> e = Expr::parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << (e.ok() ? "" : e.errors()[0].message);
  if (!e.ok()) return -999;
  int64_t out = -999;
  EXPECT_TRUE(e->eval(vars(rank, step), &out)) << text;
  return out;
}

Diagnostic parse_error(const char* text) {
  Result<Expr> e = Expr::parse(text);
  EXPECT_FALSE(e.ok()) << text;
  return e.ok() ? Diagnostic{} : e.errors()[0];
}

// The scenario format's example condition holds only for rank 0 on multiples of 400.
TEST(ExprTest, ExampleCondition) {
  const char* c = "rank == 0 && step % 400 == 0";
  EXPECT_EQ(eval(c, 0, 400), 1);
  EXPECT_EQ(eval(c, 0, 800), 1);
  EXPECT_EQ(eval(c, 1, 400), 0);
  EXPECT_EQ(eval(c, 0, 401), 0);
}

// Operators bind as documented: * / % over + - over comparisons over && over ||.
TEST(ExprTest, Precedence) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("10 - 3 - 2"), 5);         // left-associative
  EXPECT_EQ(eval("100 / 10 / 5"), 2);
  EXPECT_EQ(eval("2 * 3 % 4"), 2);
  EXPECT_EQ(eval("1 + 1 == 2"), 1);
  EXPECT_EQ(eval("1 < 2 == 1"), 1);          // relational binds tighter than equality
  EXPECT_EQ(eval("1 || 0 && 0"), 1);         // && binds tighter than ||
  EXPECT_EQ(eval("(1 || 0) && 0"), 0);
  EXPECT_EQ(eval("!0 + 1"), 2);              // unary binds tightest
  EXPECT_EQ(eval("-3 + 5"), 2);
  EXPECT_EQ(eval("- -3"), 3);
  EXPECT_EQ(eval("!!7"), 1);
  EXPECT_EQ(eval("7 && 9"), 1);              // logic yields 0 or 1
  EXPECT_EQ(eval("3 >= 3 && 2 <= 1"), 0);
  EXPECT_EQ(eval("3 != 4"), 1);
  EXPECT_EQ(eval("-7 % 3"), -1);             // C semantics
}

// Every variable reads its own slot.
TEST(ExprTest, VariablesReadTheirSlots) {
  VarValues v{};
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(10 * (i + 1));
  for (size_t i = 0; i < v.size(); ++i) {
    Result<Expr> e = Expr::parse(var_name(static_cast<Var>(i)));
    ASSERT_TRUE(e.ok());
    int64_t out = 0;
    ASSERT_TRUE(e->eval(v, &out));
    EXPECT_EQ(out, v[i]) << var_name(static_cast<Var>(i));
  }
}

// Division or modulo by zero at run time gives no value and leaves *out alone.
TEST(ExprTest, DivisionByZeroYieldsNoValue) {
  Result<Expr> e = Expr::parse("100 % step == 0");
  ASSERT_TRUE(e.ok());
  int64_t out = 42;
  EXPECT_FALSE(e->eval(vars(0, 0), &out));
  EXPECT_EQ(out, 42);
  EXPECT_TRUE(e->eval(vars(0, 50), &out));
  EXPECT_EQ(out, 1);
  Result<Expr> d = Expr::parse("rank / step");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->eval(vars(3, 0), &out));
}

// && and || short-circuit, so a guarded division never divides by zero.
TEST(ExprTest, LogicShortCircuits) {
  EXPECT_EQ(eval("step > 0 && 100 % step == 0", 0, 0), 0);
  EXPECT_EQ(eval("step == 0 || 100 % step == 0", 0, 0), 1);
  EXPECT_EQ(eval("step == 0 || 100 % step == 0", 0, 3), 0);
}

// uses() reports exactly the variables the expression reads.
TEST(ExprTest, UsesReportsVariablesRead) {
  Result<Expr> e = Expr::parse("step % 400 == 0 && tp_rank == 1");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->uses(Var::kStep));
  EXPECT_TRUE(e->uses(Var::kTpRank));
  EXPECT_FALSE(e->uses(Var::kRank));
  EXPECT_EQ(e->text(), "step % 400 == 0 && tp_rank == 1");
}

struct BadExpr {
  const char* text;
  const char* message;
  int col;
};

// Each row: a bad expression, a substring of its error, and the 1-based column it points at.
constexpr BadExpr kBadExprs[] = {
    {"", "expected an expression", 1},
    {"   ", "expected an expression", 4},
    {"rank ==", "expected an operand after '==', got end of expression", 8},
    {"rank == 0 &&", "expected an operand after '&&'", 13},
    {"rank == 0 || ", "expected an operand after '||'", 14},
    {"rank == * 2", "expected an operand after '==', got '*'", 9},
    {"rnak == 0", "unknown variable 'rnak' (did you mean 'rank'?)", 1},
    {"step == 0 && dp_rnak == 1", "did you mean 'dp_rank'?", 14},
    {"foo == 1", "unknown variable 'foo'; expected one of: rank local_rank node step", 1},
    {"(rank == 0", "expected ')' to close '(' at column 1, got end of expression", 11},
    {"((rank) == 0", "expected ')' to close '(' at column 1", 13},
    {"rank == 0)", "unmatched ')'", 10},
    {"()", "expected an expression", 2},
    {"rank = 0", "unexpected character '='; did you mean '=='?", 6},
    {"rank == 0 & step", "did you mean '&&'?", 11},
    {"rank | step", "did you mean '||'?", 6},
    {"rank $ 2", "unexpected character '$'", 6},
    {"rank 0", "expected an operator or end of expression, got '0'", 6},
    {"12ab", "bad number '12ab'", 1},
    {"99999999999999999999", "too large", 1},
    {"step / 0", "division by the constant 0", 8},
    {"step % (0)", "modulo by the constant 0", 8},
};

// Parse errors point at the offending column and say what was expected.
TEST(ExprTest, ParseErrorsAreLocated) {
  for (const BadExpr& c : kBadExprs) {
    const Diagnostic d = parse_error(c.text);
    EXPECT_NE(d.message.find(c.message), std::string::npos) << "'" << c.text << "': " << d.message;
    EXPECT_EQ(d.loc.col, c.col) << "'" << c.text << "': " << d.message;
  }
}

// Nesting past the fixed evaluation stack is a parse error, not a crash.
TEST(ExprTest, TooDeepIsAnError) {
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "(";
  deep += "1";
  for (int i = 0; i < 200; ++i) deep += ")";
  EXPECT_FALSE(Expr::parse(deep).ok());
  std::string wide = "1";
  for (int i = 0; i < 100; ++i) wide = "1 + (" + wide + ")";
  EXPECT_FALSE(Expr::parse(wide).ok());
}

// closest_name suggests a near miss and nothing for a far one.
TEST(ExprTest, ClosestName) {
  EXPECT_EQ(closest_name("rnak", {"rank", "step"}), "rank");
  EXPECT_EQ(closest_name("steps", {"rank", "step"}), "step");
  EXPECT_EQ(closest_name("banana", {"rank", "step"}), "");
}

// Evaluating a compiled expression performs no heap allocation.
TEST(ExprTest, EvalDoesNotAllocate) {
  if (!test_support::allocation_counting()) GTEST_SKIP() << "another operator new replacement is active";
  Result<Expr> e = Expr::parse("(rank == 0 || tp_rank == 1) && step % 400 == 0 && -step < world_size * 2");
  ASSERT_TRUE(e.ok());
  const VarValues v = vars(0, 400);
  int64_t out = 0, sum = 0;
  const long before = test_support::allocations();
  for (int i = 0; i < 1000; ++i) {
    e->eval(v, &out);
    sum += out;
  }
  EXPECT_EQ(test_support::allocations(), before);
  EXPECT_EQ(sum, 1000);
}

}  // namespace
}  // namespace fleetsim
