// Slow links judged against the cost model: for a simulator RunRecord, reload the
// scenario, build the model `fleetsim run` used, and compare each group instance's
// achieved collective time with the model's healthy time for its shape and bytes.
// The achieved time per seq is the shortest member's FR duration: FR measures from
// each member's own start, so the last to arrive waits least and its duration is
// the collective itself, without waiting for late peers (a straggler's signature).
#include <algorithm>
#include <cstdio>

#include "fleetsim/plan.h"
#include "sim/diagnose/fr_analyzer.h"
#include "sim/io/scenario_loader.h"
#include "sim/model/cost_model_factory.h"

namespace fleetsim::diagnose {
namespace {

constexpr double kSlowRatio = 1.25;  // below 0.8 of the expected bandwidth

std::optional<GroupKind> kind_of(const std::string& desc) {
  if (desc == "default_pg" || desc == "world") return GroupKind::kWorld;
  if (desc == "tp") return GroupKind::kTp;
  if (desc == "dp") return GroupKind::kDp;
  if (desc == "pp") return GroupKind::kPp;
  return std::nullopt;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One timed group instance and op: the per-seq shortest durations.
struct Timed {
  GroupKind kind = GroupKind::kWorld;
  std::string pg_name;
  std::string pg_desc;
  std::string op_name;
  std::vector<int> members;
  std::vector<double> samples_ms;
};

// (members, op name) -> Timed, from completed collectives every member recorded.
std::map<std::pair<std::string, std::string>, Timed> time_instances(const std::map<int, FrDump>& dumps) {
  // (pg name + members, seq) -> shortest duration, members seen, a representative entry.
  struct At { double min_ms = 0; size_t seen = 0; const FrEntry* e = nullptr; std::vector<int> members; };
  std::map<std::pair<std::string, int64_t>, At> by_seq;
  for (const auto& [rank, dump] : dumps) {
    for (const FrEntry& e : dump.entries) {
      if (e.is_p2p || e.state != "completed" || e.collective_seq_id < 0 || !e.duration_ms) continue;
      auto g = dump.groups.find(e.pg_name);
      if (g == dump.groups.end() || g->second.ranks.empty()) continue;
      At& at = by_seq[{e.pg_name + format_ranks(g->second.ranks), e.collective_seq_id}];
      if (!at.e || *e.duration_ms < at.min_ms) at.min_ms = *e.duration_ms;
      if (!at.e) at.e = &e, at.members = g->second.ranks;
      ++at.seen;
    }
  }
  std::map<std::pair<std::string, std::string>, Timed> out;
  for (const auto& [key, at] : by_seq) {
    if (at.seen != at.members.size()) continue;  // a member's entry rotated out: not the collective's time
    const std::string desc = at.e->pg_desc;
    std::optional<GroupKind> kind = kind_of(desc);
    if (!kind) continue;
    Timed& t = out[{key.first, at.e->op_name}];
    t.kind = *kind;
    t.pg_name = at.e->pg_name;
    t.pg_desc = desc;
    t.op_name = at.e->op_name;
    t.members = at.members;
    t.samples_ms.push_back(at.min_ms);
  }
  return out;
}

// The model's healthy time for one timed instance; nullopt when the plan has no such op.
std::optional<double> expected_ms(const Plan& plan, const CostModel& cost, const Timed& t) {
  if (!plan.group_exists(t.kind) || t.members.front() < 0 || t.members.front() >= plan.ranks) return std::nullopt;
  const int inst = plan.group_instance(t.kind, t.members.front());
  if (plan.group_size(t.kind) != static_cast<int>(t.members.size())) return std::nullopt;
  for (const PlanOp& op : plan.ops) {
    if (op.group != t.kind || !is_collective(op.kind) || plan.sources[op.source].name != t.op_name) continue;
    return cost.collective_time(op.kind, op.bytes, plan.group_shape(t.kind, inst)).to_millis();
  }
  return std::nullopt;
}

// Per group kind: the instances timed, and the slow ones with their worst ratio.
struct KindVerdict {
  std::map<std::string, std::pair<const Timed*, double>> worst;  // instance -> (timed, ratio)
  std::vector<std::string> slow;
};

std::optional<ModelSlowLink> judge(const Plan& plan, const CostModel& cost,
                                   const std::map<std::pair<std::string, std::string>, Timed>& timed) {
  std::map<GroupKind, KindVerdict> kinds;
  for (const auto& [key, t] : timed) {
    std::optional<double> exp = expected_ms(plan, cost, t);
    if (!exp || *exp <= 0 || t.samples_ms.empty()) continue;
    const double ratio = median_of(t.samples_ms) / *exp;
    auto& w = kinds[t.kind].worst[key.first];
    if (!w.first || ratio > w.second) w = {&t, ratio};
  }
  std::optional<ModelSlowLink> best;
  double best_ratio = kSlowRatio;
  for (auto& [kind, kv] : kinds) {
    ModelSlowLink link;
    double worst = 0;
    const Timed* worst_t = nullptr;
    for (const auto& [inst, w] : kv.worst) {
      if (w.second <= kSlowRatio) continue;
      link.slow.push_back(w.first->members);
      if (w.second > worst) worst = w.second, worst_t = w.first;
    }
    if (!worst_t || worst <= best_ratio) continue;
    link.pg_name = worst_t->pg_name;
    link.pg_desc = worst_t->pg_desc;
    link.op_name = worst_t->op_name;
    link.instances = static_cast<int>(kv.worst.size());
    link.all_slow = link.slow.size() == kv.worst.size() && link.instances > 1;
    link.achieved_ms = median_of(worst_t->samples_ms);
    link.expected_ms = link.achieved_ms / worst;
    best = link;
    best_ratio = worst;
  }
  return best;
}

}  // namespace

ModelCheck check_against_model(const Record& rec) {
  ModelCheck out;
  if (!rec.summary || rec.summary->executor != "sim" || rec.summary->file.empty() || rec.dumps.empty()) {
    return out;
  }
  const std::string& file = rec.summary->file;
  Result<Scenario> scenario = load_scenario(file);
  Result<Plan> plan = scenario ? compile_plan(*scenario) : Result<Plan>(scenario.errors());
  if (!plan) {
    out.text = "summary.json names scenario " + file + ", which does not load here: bandwidth judged "
               "against sibling groups only";
    return out;
  }
  Result<std::unique_ptr<CostModel>> cost = make_cost_model(*plan);
  if (!cost) {
    out.text = "no cost model for " + file + ": bandwidth judged against sibling groups only";
    return out;
  }
  out.loaded = true;
  out.slow = judge(*plan, **cost, time_instances(rec.dumps));
  out.text = "model (" + std::string((*cost)->name()) + ", " + file + "): " +
             (out.slow ? std::to_string(out.slow->slow.size()) + " of " + std::to_string(out.slow->instances) +
                             " " + out.slow->pg_desc + " group(s) slower than 0.8x the healthy fabric's bandwidth"
                       : std::string("every group's collectives within 1.25x of the healthy fabric's time"));
  return out;
}

}  // namespace fleetsim::diagnose
