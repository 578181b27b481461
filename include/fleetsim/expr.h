// The small expression language of `when:` conditions, e.g.
//   rank == 0 && step % 400 == 0
// Integers only (int64). Variables: rank local_rank node step world_size tp_rank
// dp_rank pp_rank. Operators, loosest first: || ; && ; == != ; < <= > >= ;
// + - ; * / % ; unary ! - ; parentheses. Comparisons and logic yield 0 or 1;
// a value is true when non-zero. Parsing compiles to a flat postfix program so
// that evaluating it (once per rank per step) does not allocate.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/status.h"

namespace fleetsim {

enum class Var : uint8_t {
  kRank, kLocalRank, kNode, kStep, kWorldSize, kTpRank, kDpRank, kPpRank,
  kCount
};
const char* var_name(Var v);

// Values of every Var, indexed by static_cast<int>(Var).
using VarValues = std::array<int64_t, static_cast<size_t>(Var::kCount)>;

// The candidate closest to `word` by edit distance, if it is close enough to
// be a likely typo (distance <= 2, and less than the word's length); else "".
// Shared by the expression parser and the scenario loader for "did you mean".
std::string closest_name(std::string_view word, const std::vector<std::string_view>& candidates);

class Expr {
 public:
  // Parses `text`. On error the Diagnostic's loc.col is the 1-based column
  // within `text` of the offending token (loc.file and loc.line are left empty
  // for the caller to fill in), and the message says what was expected, e.g.
  // "expected an operand after '&&'" or "unknown variable 'rnak' (did you mean 'rank'?)".
  static Result<Expr> parse(std::string_view text);

  // Evaluates with the given variable values. A division or modulo by zero
  // yields no value: returns false and leaves *out untouched (callers report
  // it as an error: docs/scenario-format.md, "when blocks").
  bool eval(const VarValues& vars, int64_t* out) const;

  // Partial evaluation: only the variables whose bit (1 << Var) is set in
  // `known` take their value from `vars`; the others may hold any value. True,
  // with *out, when the value is the same whatever they hold and no division
  // can fail (e.g. `rank == 0 && step % 400 == 0` at step 7 is 0 for every
  // rank); false when that is not decided so (evaluate per value then). Does
  // not allocate.
  bool eval_partial(const VarValues& vars, uint32_t known, int64_t* out) const;

  // True if the expression reads `v` (e.g. to know whether it varies by step).
  bool uses(Var v) const;

  // True if some divisor (the right side of a `/` or `%`) that does not read
  // `v` is 0, or itself has no value, under `vars`: a static check's hint that
  // some value of `v` may fail (evaluate the whole expression to know).
  bool zero_divisor_without(Var v, const VarValues& vars) const;

  const std::string& text() const { return text_; }

 private:
  struct Instr {
    uint8_t code;   // an opcode private to expr.cc
    int64_t value;  // literal value or Var index
  };
  std::string text_;
  struct Parser;  // recursive-descent compiler, defined in expr.cc
  std::vector<Instr> code_;
  uint32_t vars_used_ = 0;  // bit i set if Var i is read
  struct Divisor {
    uint32_t begin, end;  // the divisor's code: a whole subexpression, code_[begin, end)
    uint32_t vars_used;   // bit i set if the divisor reads Var i
  };
  std::vector<Divisor> divisors_;
  // Runs code_[begin, end), a whole (sub)expression; false if it has no value.
  bool run(size_t begin, size_t end, const VarValues& vars, int64_t* out) const;
};

}  // namespace fleetsim
