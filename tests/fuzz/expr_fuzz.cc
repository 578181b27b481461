// Fuzzes the `when:` expression parser (include/fleetsim/expr.h), and evaluates
// every expression it accepts at a few variable values, extreme ones included:
// arithmetic must not overflow or divide by zero.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "fleetsim/expr.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fleetsim::fuzz::input_text(data, size);
  fleetsim::Result<fleetsim::Expr> e = fleetsim::Expr::parse(text);
  if (!e) return 0;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{400}, kMax, kMin}) {
    fleetsim::VarValues vars;
    vars.fill(v);
    int64_t out = 0;
    (void)e->eval(vars, &out);
  }
  for (int i = 0; i < static_cast<int>(fleetsim::Var::kCount); ++i) (void)e->uses(static_cast<fleetsim::Var>(i));
  return 0;
}
