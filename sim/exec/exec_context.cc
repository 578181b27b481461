// The event executor's shared run state: construction and runtime errors, which
// point at the op or the `when` expression that failed.
#include "sim/exec/exec_context.h"

#include <utility>

namespace fleetsim {

ExecContext::ExecContext(const Plan& p, const CostModel& c, const std::vector<Observer*>& observers)
    : plan(p), cost(c), obs(observers), n(p.ranks), dead_(static_cast<size_t>(p.ranks), 0) {
  sched.reserve(static_cast<size_t>(n) * 2 + 16);
}

void ExecContext::runtime_error(uint32_t index, bool is_source, const std::string& what) {
  Diagnostic d;
  if (is_source) {
    d.loc = plan.sources[index].loc;
  } else {
    for (const OpSource& s : plan.sources)
      if (s.when == plan.exprs[index].text()) { d.loc = s.when_loc; break; }
    if (d.loc.file.empty()) d.loc.file = plan.scenario.file;
  }
  d.message = what;
  result.errors.push_back(std::move(d));
  stop = true;
}

}  // namespace fleetsim
