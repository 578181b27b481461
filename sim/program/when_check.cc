// Finds `when` expressions that divide by zero for some rank, statically. For
// each rank the flat step program is walked along the branches whose
// conditions do not read `step` (they go the same way at every step); a `when`
// reached that way is known to be evaluated at every step by that rank.
#include "sim/program/when_check.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace fleetsim {
namespace {

// Evaluations spent scanning the steps of step-dependent expressions; past
// it, what is left is found when the run reaches it.
constexpr int64_t kScanBudget = int64_t{1} << 22;

// The instruction after the whole `when` whose branch sits at `pc`.
uint32_t construct_end(const Plan& plan, uint32_t pc) {
  const uint32_t target = plan.program[pc].target;
  if (target > pc + 1 && plan.program[target - 1].kind == InstrKind::kJump) return plan.program[target - 1].target;
  return target;
}

class DivisionCheck {
 public:
  DivisionCheck(const Plan& plan, const std::vector<SourceLoc>& locs) : plan_(plan), locs_(locs) {}

  // Walks rank r's step program; returns the first division by zero found.
  std::optional<Diagnostic> walk(int r) {
    const VarValues at_step_1 = plan_.vars(r, 1);
    for (uint32_t pc = 0; pc < plan_.program.size();) {
      const Instr& in = plan_.program[pc];
      if (in.kind == InstrKind::kOp) { ++pc; continue; }
      if (in.kind == InstrKind::kJump) { pc = in.target; continue; }
      const Expr& e = plan_.exprs[in.index];
      if (e.uses(Var::kStep)) {
        if (auto d = scan_steps(r, in.index)) return d;
        pc = construct_end(plan_, pc);  // which side runs varies by step: not followed
        continue;
      }
      int64_t v = 0;
      if (!e.eval(at_step_1, &v)) return error(in.index, r, " (at every step: the expression does not read `step`)");
      pc = v != 0 ? pc + 1 : in.target;
    }
    return std::nullopt;
  }

 private:
  // A step-dependent expression: when a divisor that does not read `step` is
  // 0 for this rank, evaluate every step to find the first that fails (a
  // guard such as `step > 5 && ...` may keep the division from being reached).
  std::optional<Diagnostic> scan_steps(int r, uint32_t index) {
    const Expr& e = plan_.exprs[index];
    VarValues vars = plan_.vars(r, 1);
    if (!e.zero_divisor_without(Var::kStep, vars)) return std::nullopt;
    for (int64_t s = 1; s <= plan_.scenario.job.steps && budget_ > 0; ++s, --budget_) {
      vars[static_cast<size_t>(Var::kStep)] = s;
      int64_t v = 0;
      if (!e.eval(vars, &v)) return error(index, r, ", step " + std::to_string(s));
    }
    return std::nullopt;
  }

  Diagnostic error(uint32_t index, int r, const std::string& when) const {
    Diagnostic d;
    d.loc = locs_[index];
    d.message = "division by zero in `when` at rank " + std::to_string(r) + when;
    return d;
  }

  const Plan& plan_;
  const std::vector<SourceLoc>& locs_;
  int64_t budget_ = kScanBudget;
};

}  // namespace

std::optional<Diagnostic> find_static_division_by_zero(const Plan& plan, const std::vector<SourceLoc>& when_locs) {
  if (plan.exprs.empty()) return std::nullopt;
  DivisionCheck check(plan, when_locs);
  for (int r = 0; r < plan.ranks; ++r) {
    if (std::find(plan.absent_ranks.begin(), plan.absent_ranks.end(), r) != plan.absent_ranks.end()) continue;
    if (auto d = check.walk(r)) return d;
  }
  return std::nullopt;
}

}  // namespace fleetsim
