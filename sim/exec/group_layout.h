// What the two fast executors (lockstep, hybrid) share to time collectives
// without events: each group kind's instances laid out in rank order, shape
// classes whose instances share one cost per op, a collective's latest arrival
// over an instance, and whether a `when` may differ from rank to rank.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetsim/engine.h"

namespace fleetsim {

// Whether `e` reads anything but step and world_size (so its value may differ by rank).
bool rank_dependent(const Expr& e);

// One group kind's instances: instance i holds first_member(plan, kind, i) + k * stride
// for k < size.
struct GroupLayout {
  int count = 0, size = 0, stride = 1;
  std::vector<uint16_t> shape_class;  // per instance
  std::vector<GroupShape> shapes;     // per class
};

// The lowest rank of instance `instance` of group kind `g`.
int first_member(const Plan& plan, GroupKind g, int instance);

// Per GroupKind, the layout of the kinds that some op `timed` accepts runs on (an
// empty layout for the others); per plan op that `timed` accepts, its cost on each
// shape class of its group (empty for the others).
struct GroupTable {
  std::vector<GroupLayout> groups;
  std::vector<std::vector<int64_t>> op_cost;
};
GroupTable group_table(const Plan& plan, const CostModel& cost, bool (*timed)(OpKind));

// A collective's latest arrival: when, and which rank (the lowest on ties).
struct Arrival {
  int64_t ns = -1;
  int rank = -1;
};

// The latest of the clocks of instance `L` whose lowest rank is `base`.
inline Arrival latest_arrival(const int64_t* clock, int base, const GroupLayout& L) {
  Arrival a{0, base};
  const int stop = base + L.size * L.stride;
  for (int r = base; r < stop; r += L.stride) {
    if (clock[r] > a.ns) a = Arrival{clock[r], r};
  }
  return a;
}

// Keeps in `*kept` the later of it and `a` (on a tie, the lower rank).
inline void keep_latest(const Arrival& a, Arrival* kept) {
  if (a.ns > kept->ns || (a.ns == kept->ns && a.rank < kept->rank)) *kept = a;
}

}  // namespace fleetsim
