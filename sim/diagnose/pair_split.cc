// One rank against one: in a two-member group where one member holds an op the other
// lacks, the flight recorder's counts cannot say which side is wrong (the holder may
// have issued an extra op, or the other may never have got there). The walk settles it
// as an engineer would, from the other evidence, strongest first: a member that crashed,
// whose GPU idles while its peer spins in NCCL, or whose CPU entered an op and never
// returned, never got there. Short of those, a rank condition on the holder's op decides
// (the `when` rule); then a member with nothing pending anywhere while its peer waits on
// it (the wait-for graph) never got there, unless it finished all its steps. Otherwise
// the split stays a tie.
#include <algorithm>

#include "sim/diagnose/walk_context.h"

namespace fleetsim::diagnose {
namespace {

bool has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

void WalkContext::settle_pairs() {
  bool changed = false;
  for (Divergence& div : fr.divergences) {
    if (div.p2p || div.kind != DivergenceKind::kPresence || div.members.size() != 2 || div.minority.size() != 1 ||
        div.majority.size() != 1)
      continue;
    const int holder = div.minority_has_entry ? div.minority[0] : div.majority[0];
    const int lacker = div.minority_has_entry ? div.majority[0] : div.minority[0];
    const std::string h = "rank " + std::to_string(holder), l = "rank " + std::to_string(lacker);
    auto stuck = rec.cpu_stuck.find(lacker);
    bool never_issued = false;
    for (const WaitRoot& r : fr.waits.roots) never_issued |= r.rank == lacker && r.kind == WaitKind::kNeverIssued;
    std::string why;
    if (has(crashed, lacker) || (rec.summary && rec.summary->crash_rank == lacker)) {
      why = l + " crashed";
    } else if (has(util.idle_ranks, lacker) && !has(util.idle_ranks, holder)) {
      why = "utilization: " + l + " is at 0% while " + h + " spins in NCCL, so " + l + " never got there";
    } else if (stuck != rec.cpu_stuck.end() && !rec.cpu_stuck.count(holder)) {
      why = "trace.json: " + l + "'s CPU entered " + stuck->second.where + " and never returned";
    } else if (div.minority_has_entry && !div.tie && is_rank_condition(div.when)) {
      continue;  // the holder's op runs under a rank condition: the `when` rule has decided
    } else if (never_issued && !finished_its_steps(lacker, div.pg_name)) {
      why = "the wait-for graph: " + l + " has nothing pending anywhere while " + h + " waits on it";
    } else {
      continue;
    }
    div.minority = {lacker};
    div.majority = {holder};
    div.minority_has_entry = false;
    div.shift = -1;
    div.when_on_minority = false;
    div.tie = false;
    div.settled_by = why;
    changed = true;
  }
  if (changed) sort_divergences(fr.divergences);
}

}  // namespace fleetsim::diagnose
