// The group layouts, shape classes and per-op costs the fast executors share
// (group_layout.h).
#include "sim/exec/group_layout.h"

namespace fleetsim {

bool rank_dependent(const Expr& e) {
  for (size_t v = 0; v < static_cast<size_t>(Var::kCount); ++v) {
    const auto var = static_cast<Var>(v);
    if (var != Var::kStep && var != Var::kWorldSize && e.uses(var)) return true;
  }
  return false;
}

int first_member(const Plan& plan, GroupKind g, int instance) {
  switch (g) {
    case GroupKind::kWorld: return 0;
    case GroupKind::kTp: return instance * plan.tp;
    case GroupKind::kDp: return (instance / plan.tp) * plan.tp * plan.dp + instance % plan.tp;
    case GroupKind::kPp: return instance;
  }
  return 0;
}

GroupTable group_table(const Plan& plan, const CostModel& cost, bool (*timed)(OpKind)) {
  GroupTable t;
  // Only the kinds timed ops use are laid out (a tp of 1 has a group per rank).
  bool used[kGroupKinds] = {};
  for (const PlanOp& op : plan.ops)
    if (timed(op.kind)) used[static_cast<size_t>(op.group)] = true;
  t.groups.resize(kGroupKinds);
  for (int gi = 0; gi < kGroupKinds; ++gi) {
    const auto g = static_cast<GroupKind>(gi);
    if (!used[gi] || !plan.group_exists(g)) continue;
    GroupLayout& L = t.groups[static_cast<size_t>(gi)];
    L.count = plan.group_count(g);
    L.size = plan.group_size(g);
    L.stride = g == GroupKind::kDp ? plan.tp : g == GroupKind::kPp ? plan.tp * plan.dp : 1;
    L.shape_class.resize(static_cast<size_t>(L.count));
    for (int i = 0; i < L.count; ++i) {  // instances of one shape share one cost per op
      const GroupShape s = plan.group_shape(g, i);
      size_t c = 0;
      while (c < L.shapes.size() && !(L.shapes[c].ranks == s.ranks && L.shapes[c].nodes == s.nodes &&
                                      L.shapes[c].ranks_per_node == s.ranks_per_node)) ++c;
      if (c == L.shapes.size()) L.shapes.push_back(s);
      FLEETSIM_CHECK(c < 65536);
      L.shape_class[static_cast<size_t>(i)] = static_cast<uint16_t>(c);
    }
  }
  t.op_cost.resize(plan.ops.size());
  for (size_t o = 0; o < plan.ops.size(); ++o) {
    const PlanOp& op = plan.ops[o];
    if (!timed(op.kind)) continue;
    for (const GroupShape& s : t.groups[static_cast<size_t>(op.group)].shapes)
      t.op_cost[o].push_back(cost.collective_time(op.kind, op.bytes, s).ns);
  }
  return t;
}

}  // namespace fleetsim
